// CHIME's flush points (dmrt/indexes/chime/detail/options.h, FlushPoint) proved on sim's coherence
// model: all in place, the history is linearizable under `none`; any one removed, the run is
// caught. The leaf points are proved on hot keys that fit one leaf; the structural ones (root word,
// internal nodes) on a run that grows the tree from one leaf to three levels.
#include <gtest/gtest.h>

#include "coherence_run.h"
#include "dmrt/indexes/chime/chime.h"

namespace dmrt::coherence_test {
namespace {

using ChimeTree = chime::Tree<SimTransport>;

bool structural(chime::FlushPoint p) {
  return p == chime::FlushPoint::kRootInvalidate || p == chime::FlushPoint::kInternalInvalidate ||
         p == chime::FlushPoint::kInternalWriteBack;
}

Outcome run_chime(sim::Coherence coherence, chime::Options co = {}, bool grow = false) {
  Shape s = grow ? growing_shape() : Shape{};
  if (grow) {
    co.span = 16;
    co.internal_span = 4;
  }
  co.value_size = 16;  // fixed-size values: the runs' own length
  return run(
      s, sim_options(s, coherence),
      [&](sim::SimClient& c, sim::Cluster&) { return ChimeTree::create(c, co); },
      [](auto& t, sim::SimClient& c) { return t.handle(c); });
}

TEST(ChimeCoherence, AllPointsAreLinearizableUnderNone) {
  Outcome r = run_chime(sim::Coherence::kNone);
  print("chime", "all points", r);
  EXPECT_FALSE(r.stuck);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.result.linearizable) << r.result.explain();
  EXPECT_GE(r.counts.lines_invalidated, r.ops);  // a neighbourhood per operation at least
  EXPECT_GT(r.counts.lines_written_back, 0u);
}

TEST(ChimeCoherence, AGrowingTreeIsLinearizableUnderNone) {
  Outcome r = run_chime(sim::Coherence::kNone, {}, true);
  print("chime", "all points, growing", r);
  EXPECT_FALSE(r.stuck);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.result.linearizable) << r.result.explain();
}

#ifdef DMRT_FAULT_INJECTION
class ChimeFlushPoint : public ::testing::TestWithParam<chime::FlushPoint> {};

TEST_P(ChimeFlushPoint, RemovedIsCaught) {
  chime::Options co;
  co.faults.skip_flush.add(GetParam());
  Outcome r = run_chime(sim::Coherence::kNone, co, structural(GetParam()));
  print("chime", std::string("without ") + std::string(flush_point_name(GetParam())), r);
  EXPECT_TRUE(r.caught()) << r.result.explain();
}

INSTANTIATE_TEST_SUITE_P(Points, ChimeFlushPoint, ::testing::ValuesIn(chime::kFlushPoints),
                         [](const auto& p) { return std::string(flush_point_name(p.param)); });
#endif

}  // namespace
}  // namespace dmrt::coherence_test
