// SMART's flush points (dmrt/indexes/smart/detail/options.h, FlushPoint) proved on sim's coherence
// model: all in place, the history is linearizable under `none`; any one removed, the run is
// caught. Each compute node has its tree handle (attach), as SMART's clients need.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "coherence_run.h"
#include "dmrt/indexes/smart/smart.h"

namespace dmrt::coherence_test {
namespace {

using SmartTree = smart::Tree<SimTransport>;

// One tree object per compute node.
struct SmartTrees {
  std::map<NodeId, std::shared_ptr<SmartTree>> by_node;
};

Outcome run_smart(sim::Coherence coherence, smart::Options so = {}) {
  Shape s;
  so.value_size = 16;
  return run(
      s, sim_options(s, coherence),
      [&](sim::SimClient& setup, sim::Cluster& cluster) {
        auto t = std::make_shared<SmartTrees>();
        t->by_node[setup.home_node()] = SmartTree::create(setup, so);
        for (NodeId n : cluster.compute_nodes()) {
          if (t->by_node.count(n)) continue;
          sim::SimClient c(cluster.endpoint(n, 998));
          t->by_node[n] = SmartTree::attach(c, so);
        }
        return t;
      },
      [](SmartTrees& t, sim::SimClient& c) { return t.by_node.at(c.home_node())->handle(c); });
}

TEST(SmartCoherence, AllPointsAreLinearizableUnderNone) {
  Outcome r = run_smart(sim::Coherence::kNone);
  print("smart", "all points", r);
  EXPECT_FALSE(r.stuck);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.result.linearizable) << r.result.explain();
  EXPECT_GT(r.counts.lines_invalidated, 0u);
  EXPECT_GT(r.counts.lines_written_back, 0u);
}

#ifdef DMRT_FAULT_INJECTION
class SmartFlushPoint : public ::testing::TestWithParam<smart::FlushPoint> {};

TEST_P(SmartFlushPoint, RemovedIsCaught) {
  smart::Options so;
  so.faults.skip_flush.add(GetParam());
  Outcome r = run_smart(sim::Coherence::kNone, so);
  print("smart", std::string("without ") + std::string(flush_point_name(GetParam())), r);
  EXPECT_TRUE(r.caught()) << r.result.explain();
}

INSTANTIATE_TEST_SUITE_P(Points, SmartFlushPoint, ::testing::ValuesIn(smart::kFlushPoints),
                         [](const auto& p) { return std::string(flush_point_name(p.param)); });
#endif

}  // namespace
}  // namespace dmrt::coherence_test
