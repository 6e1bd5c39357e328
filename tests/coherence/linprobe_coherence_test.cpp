// linprobe's flush points (dmrt/indexes/linprobe/detail/options.h, FlushPoint) proved on sim's
// coherence model: all in place, the history is linearizable under `none`; any one removed, the
// run is caught.
#include <gtest/gtest.h>

#include "coherence_run.h"
#include "dmrt/indexes/linprobe/linprobe.h"

namespace dmrt::coherence_test {
namespace {

using LinprobeTable = linprobe::HashTable<SimTransport>;

Outcome run_linprobe(sim::Coherence coherence, linprobe::Options lo = {}) {
  Shape s;
  lo.buckets = 8;  // the hot keys share buckets and windows
  lo.window = 2;
  lo.value_size = 32;
  return run(
      s, sim_options(s, coherence),
      [&](sim::SimClient& c, sim::Cluster&) { return LinprobeTable::create(c, lo); },
      [](LinprobeTable& t, sim::SimClient& c) { return t.handle(c); });
}

TEST(LinprobeCoherence, AllPointsAreLinearizableUnderNone) {
  Outcome r = run_linprobe(sim::Coherence::kNone);
  print("linprobe", "all points", r);
  EXPECT_FALSE(r.stuck);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.result.linearizable) << r.result.explain();
  EXPECT_GT(r.counts.lines_invalidated, r.ops);  // a window (2 lines) per operation at least
  EXPECT_GT(r.counts.lines_written_back, 0u);
  // Deterministic: the same run flushes the same lines.
  Outcome again = run_linprobe(sim::Coherence::kNone);
  EXPECT_EQ(again.counts.lines_invalidated, r.counts.lines_invalidated);
  EXPECT_EQ(again.counts.lines_written_back, r.counts.lines_written_back);
}

TEST(LinprobeCoherence, CoherentRunFlushesNothing) {
  Outcome r = run_linprobe(sim::Coherence::kCoherent);
  EXPECT_TRUE(r.result.linearizable) << r.result.explain();
  EXPECT_EQ(r.counts.lines_invalidated + r.counts.lines_written_back + r.counts.stale_lines, 0u);
}

#ifdef DMRT_FAULT_INJECTION
class LinprobeFlushPoint : public ::testing::TestWithParam<linprobe::FlushPoint> {};

TEST_P(LinprobeFlushPoint, RemovedIsCaught) {
  linprobe::Options lo;
  lo.faults.skip_flush.add(GetParam());
  Outcome r = run_linprobe(sim::Coherence::kNone, lo);
  print("linprobe", std::string("without ") + std::string(flush_point_name(GetParam())), r);
  EXPECT_TRUE(r.caught()) << r.result.explain();
}

INSTANTIATE_TEST_SUITE_P(Points, LinprobeFlushPoint, ::testing::ValuesIn(linprobe::kFlushPoints),
                         [](const auto& p) { return std::string(flush_point_name(p.param)); });
#endif

}  // namespace
}  // namespace dmrt::coherence_test
