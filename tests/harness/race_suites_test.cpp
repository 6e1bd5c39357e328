// The generic harness suites on RACE hashing: differential against std::map, concurrent stress
// checked for linearizability, and the fault proof (delete_skips_cas must be caught).
#include <gtest/gtest.h>

#include "dmrt/indexes/race/race.h"
#include "tests/harness/kv_suites.h"
#include "tests/runtime/test_cluster.h"

namespace dmrt::harness {
namespace {

using Race = race::RaceIndex<ShmTransport>;

std::shared_ptr<shm::Pool> race_pool() {
  return testing::interleaved(
      shm::Pool::create(ClusterConfig::embedded(2, 1, uint64_t{256} << 20, uint64_t{8} << 20)));
}

race::Options race_options() {
  race::Options o;
  o.value_size = 128;
  o.initial_global_depth = 1;
  o.groups_per_subtable = 64;  // small subtables: splits happen during the runs
  return o;
}

TEST(HarnessRace, DifferentialAgainstStdMap) {
  for (uint64_t seed : {11, 12}) {
    auto pool = race_pool();
    auto c = testing::make_client(pool, 0);
    auto idx = Race::create(c, race_options());
    DifferentialOptions d;
    d.keys = 4096;
    differential_test([&] { return idx->handle(c); }, 30000, seed, d);
  }
}

TEST(HarnessRace, StressIsLinearizableUnderSkew) {
  auto pool = race_pool();
  auto setup = testing::make_client(pool, 1000);
  auto idx = Race::create(setup, race_options());
  StressOptions o;
  o.keys = 256;
  o.ops_per_worker = 2000;
  stress_test(
      pool, [&](ShmClient& c) { return idx->handle(c); }, o);
}

TEST(HarnessRace, StressIsLinearizableOnAHotSmallKeySpace) {
  auto pool = race_pool();
  auto setup = testing::make_client(pool, 1000);
  auto idx = Race::create(setup, race_options());
  StressOptions o;
  o.keys = 64;
  o.threads = 2;
  o.fibers = 16;
  o.ops_per_worker = 2000;
  o.mix = {30, 30, 20, 20, 0};
  o.seed = 3;
  stress_test(
      pool, [&](ShmClient& c) { return idx->handle(c); }, o);
}

#ifdef DMRT_FAULT_INJECTION
TEST(HarnessRace, DeleteSkipsCasFaultIsReportedAsAViolation) {
  auto pool = race_pool();
  auto setup = testing::make_client(pool, 1000);
  race::Options ro = race_options();
  ro.faults.delete_skips_cas = true;
  auto idx = Race::create(setup, ro);
  StressOptions o;
  o.keys = 64;
  o.ops_per_worker = 1000;
  auto out = run_stress(
      pool, [&](ShmClient& c) { return idx->handle(c); }, o);
  EXPECT_EQ(out.result.verdict, Verdict::kViolation) << out.result.explain();
  std::printf("%s", out.result.explain().c_str());
}
#endif

}  // namespace
}  // namespace dmrt::harness
