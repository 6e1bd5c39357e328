// The generic harness suites on SMART: differential against std::map (with scans) and concurrent
// insert-heavy stress (leaf splits and node type switches all the time), checked for
// linearizability, with the paper's techniques on and off.
#include <gtest/gtest.h>

#include "dmrt/indexes/smart/smart.h"
#include "tests/harness/kv_suites.h"
#include "tests/runtime/test_cluster.h"

namespace dmrt::harness {
namespace {

std::shared_ptr<shm::Pool> smart_pool() {
  return testing::interleaved(
      shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{256} << 20, uint64_t{8} << 20)));
}

smart::Options smart_options(uint32_t value_size, bool techniques) {
  smart::Options o;
  o.value_size = value_size;
  o.cache = o.read_delegation = o.write_combining = o.adaptive_nodes = techniques;
  return o;
}

void smart_differential(const smart::Options& opt) {
  for (uint64_t seed : {31, 32}) {
    auto pool = smart_pool();
    auto c = testing::make_client(pool, 0);
    auto t = smart::Tree<ShmTransport>::create(c, opt);
    DifferentialOptions d;
    d.keys = 2048;
    d.min_value = d.max_value = opt.value_size;  // fixed-size inline values (dmrt/runtime/kv.h)
    differential_test([&] { return t->handle(c); }, 20000, seed, d);
  }
}

void smart_stress(const smart::Options& opt, uint64_t keys, uint64_t seed) {
  auto pool = smart_pool();
  auto setup = testing::make_client(pool, 1000);
  auto t = smart::Tree<ShmTransport>::create(setup, opt);
  StressOptions o;
  o.keys = keys;
  o.threads = 2;
  o.fibers = 16;
  o.ops_per_worker = 1500;
  o.mix = {35, 30, 15, 15, 5};  // insert-heavy: splits and type switches under contention
  o.seed = seed;
  o.value_bytes = opt.value_size;
  stress_test(
      pool, [&](ShmClient& c) { return t->handle(c); }, o);
}

TEST(HarnessSmart, DifferentialAgainstStdMap) {
  smart_differential(smart_options(32, true));
}
TEST(HarnessSmart, StressIsLinearizableUnderSkewWithSplits) {
  smart_stress(smart_options(24, true), 512, 8);
}
TEST(HarnessSmart, StressIsLinearizableWithEveryTechniqueOff) {
  smart_stress(smart_options(24, false), 256, 9);
}

}  // namespace
}  // namespace dmrt::harness
