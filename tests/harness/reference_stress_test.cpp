// The stress suite on the reference index: linearizable when correct, caught when faulty.
#include <gtest/gtest.h>

#include "tests/harness/kv_suites.h"
#include "tests/harness/reference_index.h"
#include "tests/runtime/test_cluster.h"

namespace dmrt::harness {
namespace {

using Ref = ReferenceIndex<ShmTransport>;

std::shared_ptr<Ref> make_index(const std::shared_ptr<shm::Pool>& pool, uint64_t keys,
                                ReferenceFaults f = {}) {
  auto c = testing::make_client(pool, 1000);
  return Ref::create(c, keys, f);
}

TEST(HarnessStress, ReferenceIndexIsLinearizableUnderSkew) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto idx = make_index(pool, 64);
  StressOptions o;
  o.keys = 64;
  o.ops_per_worker = 3000;
  auto out = stress_test(
      pool, [&](ShmClient& c) { return idx->handle(c); }, o);
  EXPECT_GT(out.result.scans_checked, 0u);
}

TEST(HarnessStress, ReferenceIndexIsLinearizableOnALargerKeySpace) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto idx = make_index(pool, 1000);
  StressOptions o;
  o.keys = 1000;
  o.threads = 2;
  o.fibers = 16;
  o.ops_per_worker = 2000;
  o.mix = {30, 30, 20, 20, 0};
  o.seed = 5;
  stress_test(
      pool, [&](ShmClient& c) { return idx->handle(c); }, o);
}

TEST(HarnessStress, StaleSearchFaultIsReportedAsAViolation) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto idx = make_index(pool, 64, ReferenceFaults{.stale_search = true});
  StressOptions o;
  o.keys = 64;
  o.ops_per_worker = 1000;
  auto out = run_stress(
      pool, [&](ShmClient& c) { return idx->handle(c); }, o);
  EXPECT_EQ(out.result.verdict, Verdict::kViolation) << out.result.explain();
  EXPECT_TRUE(out.result.failing_key.has_value());
  EXPECT_LE(out.result.smallest_failing_history.size(), 12u) << out.result.explain();
  std::printf("%s", out.result.explain().c_str());
}

TEST(HarnessStress, UpdateWithoutCasFaultIsReportedAsAViolation) {
  // A plain-write update resurrects keys removed meanwhile and loses concurrent changes; with
  // few keys and many writers some run shows it. Several seeds, any one catching it suffices.
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  bool caught = false;
  for (uint64_t seed = 1; seed <= 5 && !caught; ++seed) {
    auto idx = make_index(pool, 8, ReferenceFaults{.update_without_cas = true});
    StressOptions o;
    o.keys = 8;
    o.ops_per_worker = 1500;
    o.mix = {30, 15, 40, 15, 0};
    o.seed = seed;
    auto out = run_stress(
        pool, [&](ShmClient& c) { return idx->handle(c); }, o);
    EXPECT_NE(out.result.verdict, Verdict::kUnknown) << out.result.explain();
    if (out.result.verdict == Verdict::kViolation) {
      caught = true;
      std::printf("%s", out.result.explain().c_str());
    }
  }
  EXPECT_TRUE(caught);
}

}  // namespace
}  // namespace dmrt::harness
