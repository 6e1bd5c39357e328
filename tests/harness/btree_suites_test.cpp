// The generic harness suites on CHIME and Sherman: differential against std::map (with scans) and
// concurrent stress with small leaves (splits all the time), checked for linearizability.
#include <gtest/gtest.h>

#include "dmrt/indexes/chime/chime.h"
#include "dmrt/indexes/sherman/sherman.h"
#include "tests/harness/kv_suites.h"
#include "tests/runtime/test_cluster.h"

namespace dmrt::harness {
namespace {

std::shared_ptr<shm::Pool> tree_pool() {
  return testing::interleaved(
      shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{256} << 20, uint64_t{8} << 20)));
}

// Small nodes so that a few hundred hot keys split leaves and internal nodes during the run.
chime::Options chime_options(uint32_t value_size) {
  chime::Options o;
  o.value_size = value_size;
  o.span = 16;
  o.neighborhood = 4;
  o.internal_span = 6;
  o.hotspot_bytes = 1 << 14;
  return o;
}
sherman::Options sherman_options(uint32_t value_size) {
  sherman::Options o;
  o.value_size = value_size;
  o.leaf_span = 8;
  o.internal_span = 6;
  return o;
}

template <class Tree, class Opt>
void differential(const Opt& opt) {
  for (uint64_t seed : {21, 22}) {
    auto pool = tree_pool();
    auto c = testing::make_client(pool, 0);
    auto t = Tree::create(c, opt);
    DifferentialOptions d;
    d.keys = 2048;
    d.min_value = d.max_value = opt.value_size;  // fixed-size inline values (dmrt/runtime/kv.h)
    differential_test([&] { return t->handle(c); }, 20000, seed, d);
  }
}

template <class Tree, class Opt>
void stress(const Opt& opt, uint64_t keys, uint64_t seed) {
  auto pool = tree_pool();
  auto setup = testing::make_client(pool, 1000);
  auto t = Tree::create(setup, opt);
  StressOptions o;
  o.keys = keys;
  o.threads = 2;
  o.fibers = 16;
  o.ops_per_worker = 1500;
  o.mix = {35, 30, 15, 15, 5};  // insert-heavy: splits under contention
  o.seed = seed;
  o.value_bytes = opt.value_size;
  stress_test(
      pool, [&](ShmClient& c) { return t->handle(c); }, o);
}

TEST(HarnessChime, DifferentialAgainstStdMap) {
  differential<chime::Tree<ShmTransport>>(chime_options(32));
}
TEST(HarnessChime, StressIsLinearizableUnderSkewWithSplits) {
  stress<chime::Tree<ShmTransport>>(chime_options(24), 512, 5);
}
TEST(HarnessChime, StressIsLinearizableWithEveryTechniqueOff) {
  chime::Options o = chime_options(24);
  o.hopscotch_leaf = false;
  o.vacancy_piggyback = false;
  o.metadata_replication = false;
  o.speculative_read = false;
  stress<chime::Tree<ShmTransport>>(o, 256, 6);
}

TEST(HarnessSherman, DifferentialAgainstStdMap) {
  differential<sherman::Tree<ShmTransport>>(sherman_options(32));
}
TEST(HarnessSherman, StressIsLinearizableUnderSkewWithSplits) {
  stress<sherman::Tree<ShmTransport>>(sherman_options(24), 512, 7);
}

}  // namespace
}  // namespace dmrt::harness
