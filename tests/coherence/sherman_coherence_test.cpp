// Sherman's flush points (dmrt/indexes/sherman/detail/options.h, FlushPoint) proved on sim's
// coherence model: all in place, the history is linearizable under `none`; any one removed, the
// run is caught. The leaf points are proved on hot keys that fit one leaf; the structural ones
// (root word, internal nodes) on a run that grows the tree from one leaf to three levels.
#include <gtest/gtest.h>

#include "coherence_run.h"
#include "dmrt/indexes/sherman/sherman.h"

namespace dmrt::coherence_test {
namespace {

using ShermanTree = sherman::Tree<SimTransport>;

bool structural(sherman::FlushPoint p) {
  return p == sherman::FlushPoint::kRootInvalidate ||
         p == sherman::FlushPoint::kInternalInvalidate ||
         p == sherman::FlushPoint::kInternalWriteBack;
}

Outcome run_sherman(sim::Coherence coherence, sherman::Options so = {}, bool grow = false) {
  Shape s = grow ? growing_shape() : Shape{};
  so.leaf_span = grow ? 8 : 32;
  so.internal_span = grow ? 4 : so.internal_span;
  so.value_size = 16;  // fixed-size values: the runs' own length
  return run(
      s, sim_options(s, coherence),
      [&](sim::SimClient& c, sim::Cluster&) { return ShermanTree::create(c, so); },
      [](auto& t, sim::SimClient& c) { return t.handle(c); });
}

TEST(ShermanCoherence, AllPointsAreLinearizableUnderNone) {
  Outcome r = run_sherman(sim::Coherence::kNone);
  print("sherman", "all points", r);
  EXPECT_FALSE(r.stuck);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.result.linearizable) << r.result.explain();
  EXPECT_GE(r.counts.lines_invalidated, r.ops);  // a leaf per operation
  EXPECT_GT(r.counts.lines_written_back, 0u);
}

TEST(ShermanCoherence, AGrowingTreeIsLinearizableUnderNone) {
  Outcome r = run_sherman(sim::Coherence::kNone, {}, true);
  print("sherman", "all points, growing", r);
  EXPECT_FALSE(r.stuck);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.result.linearizable) << r.result.explain();
}

#ifdef DMRT_FAULT_INJECTION
class ShermanFlushPoint : public ::testing::TestWithParam<sherman::FlushPoint> {};

TEST_P(ShermanFlushPoint, RemovedIsCaught) {
  sherman::Options so;
  so.faults.skip_flush.add(GetParam());
  Outcome r = run_sherman(sim::Coherence::kNone, so, structural(GetParam()));
  print("sherman", std::string("without ") + std::string(flush_point_name(GetParam())), r);
  EXPECT_TRUE(r.caught()) << r.result.explain();
}

INSTANTIATE_TEST_SUITE_P(Points, ShermanFlushPoint, ::testing::ValuesIn(sherman::kFlushPoints),
                         [](const auto& p) { return std::string(flush_point_name(p.param)); });
#endif

}  // namespace
}  // namespace dmrt::coherence_test
