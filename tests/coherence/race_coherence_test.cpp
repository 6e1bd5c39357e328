// RACE's flush points (dmrt/indexes/race/detail/options.h, FlushPoint) proved on sim's coherence
// model: all in place, the history is linearizable under `none`; any one removed, the run is
// caught. The bucket and block points are proved on hot keys in one subtable; the resize path's
// (directory, new subtables) on a run that splits subtables and doubles the directory as it grows.
#include <gtest/gtest.h>

#include "coherence_run.h"
#include "dmrt/indexes/race/race.h"

namespace dmrt::coherence_test {
namespace {

using RaceIdx = race::RaceIndex<SimTransport>;

bool resizing(race::FlushPoint p) {
  return p == race::FlushPoint::kDirectoryInvalidate || p == race::FlushPoint::kSubtableWriteBack;
}

Outcome run_race(sim::Coherence coherence, race::Options ro = {}, bool grow = false) {
  Shape s = grow ? growing_shape() : Shape{};
  ro.value_size = 32;
  ro.initial_global_depth = 0;
  ro.groups_per_subtable = grow ? 2 : 64;
  return run(
      s, sim_options(s, coherence),
      [&](sim::SimClient& c, sim::Cluster&) { return RaceIdx::create(c, ro); },
      [](RaceIdx& t, sim::SimClient& c) { return t.handle(c); });
}

TEST(RaceCoherence, AllPointsAreLinearizableUnderNone) {
  Outcome r = run_race(sim::Coherence::kNone);
  print("race", "all points", r);
  EXPECT_FALSE(r.stuck);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.result.linearizable) << r.result.explain();
  EXPECT_GT(r.counts.lines_invalidated, 2 * r.ops);  // two combined buckets per operation
  EXPECT_GT(r.counts.lines_written_back, 0u);
}

TEST(RaceCoherence, AGrowingIndexIsLinearizableUnderNone) {
  Outcome r = run_race(sim::Coherence::kNone, {}, true);
  print("race", "all points, growing", r);
  EXPECT_FALSE(r.stuck);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.result.linearizable) << r.result.explain();
}

#ifdef DMRT_FAULT_INJECTION
class RaceFlushPoint : public ::testing::TestWithParam<race::FlushPoint> {};

TEST_P(RaceFlushPoint, RemovedIsCaught) {
  race::Options ro;
  ro.faults.skip_flush.add(GetParam());
  Outcome r = run_race(sim::Coherence::kNone, ro, resizing(GetParam()));
  print("race", std::string("without ") + std::string(flush_point_name(GetParam())), r);
  EXPECT_TRUE(r.caught()) << r.result.explain();
}

INSTANTIATE_TEST_SUITE_P(Points, RaceFlushPoint, ::testing::ValuesIn(race::kFlushPoints),
                         [](const auto& p) { return std::string(flush_point_name(p.param)); });
#endif

}  // namespace
}  // namespace dmrt::coherence_test
