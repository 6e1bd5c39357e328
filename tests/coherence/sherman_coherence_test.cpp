// Sherman's flush points (dmrt/indexes/sherman/detail/options.h, FlushPoint) proved on sim's
// coherence model: all in place, the history is linearizable under `none`; any one removed, the
// run is caught. The hot keys fit one leaf: no split (whose internal nodes have no points yet).
#include <gtest/gtest.h>

#include "coherence_run.h"
#include "dmrt/indexes/sherman/sherman.h"

namespace dmrt::coherence_test {
namespace {

using ShermanTree = sherman::Tree<SimTransport>;

Outcome run_sherman(sim::Coherence coherence, sherman::Options so = {}) {
  Shape s;
  so.leaf_span = 32;
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

#ifdef DMRT_FAULT_INJECTION
class ShermanFlushPoint : public ::testing::TestWithParam<sherman::FlushPoint> {};

TEST_P(ShermanFlushPoint, RemovedIsCaught) {
  sherman::Options so;
  so.faults.skip_flush.add(GetParam());
  Outcome r = run_sherman(sim::Coherence::kNone, so);
  print("sherman", std::string("without ") + std::string(flush_point_name(GetParam())), r);
  EXPECT_TRUE(r.caught()) << r.result.explain();
}

INSTANTIATE_TEST_SUITE_P(Points, ShermanFlushPoint, ::testing::ValuesIn(sherman::kFlushPoints),
                         [](const auto& p) { return std::string(flush_point_name(p.param)); });
#endif

}  // namespace
}  // namespace dmrt::coherence_test
