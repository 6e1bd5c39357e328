// DMTree's flush points (dmrt/indexes/dmtree/detail/options.h, FlushPoint) proved on sim's
// coherence model: all in place, the history is linearizable under `none`; any one removed, the
// run is caught. Each compute node has its tree (attach), and the fingerprint tables live on the
// compute nodes (collaborative), so a table's owner reaches it through its own host's cache and
// the other nodes through theirs.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "coherence_run.h"
#include "dmrt/indexes/dmtree/dmtree.h"

namespace dmrt::coherence_test {
namespace {

using DmTree = dmtree::Tree<SimTransport>;

// One tree object per compute node.
struct DmTrees {
  std::map<NodeId, std::shared_ptr<DmTree>> by_node;
};

Outcome run_dmtree(sim::Coherence coherence, dmtree::Options o = {}) {
  Shape s;
  o.value_size = 16;
  return run(
      s, sim_options(s, coherence),
      [&](sim::SimClient& setup, sim::Cluster& cluster) {
        auto t = std::make_shared<DmTrees>();
        t->by_node[setup.home_node()] = DmTree::create(setup, o);
        for (NodeId n : cluster.compute_nodes()) {
          if (t->by_node.count(n)) continue;
          sim::SimClient c(cluster.endpoint(n, 998));
          t->by_node[n] = DmTree::attach(c, o);
        }
        return t;
      },
      [](DmTrees& t, sim::SimClient& c) { return t.by_node.at(c.home_node())->handle(c); });
}

TEST(DmtreeCoherence, AllPointsAreLinearizableUnderNone) {
  Outcome r = run_dmtree(sim::Coherence::kNone);
  print("dmtree", "all points", r);
  EXPECT_FALSE(r.stuck);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.result.linearizable) << r.result.explain();
  EXPECT_GT(r.counts.lines_invalidated, 0u);
  EXPECT_GT(r.counts.lines_written_back, 0u);
  // Deterministic: the same run flushes the same lines.
  Outcome again = run_dmtree(sim::Coherence::kNone);
  EXPECT_EQ(again.counts.lines_invalidated, r.counts.lines_invalidated);
  EXPECT_EQ(again.counts.lines_written_back, r.counts.lines_written_back);
}

TEST(DmtreeCoherence, CoherentRunFlushesNothing) {
  Outcome r = run_dmtree(sim::Coherence::kCoherent);
  EXPECT_TRUE(r.result.linearizable) << r.result.explain();
  EXPECT_EQ(r.counts.lines_invalidated + r.counts.lines_written_back + r.counts.stale_lines, 0u);
}

#ifdef DMRT_FAULT_INJECTION
class DmtreeFlushPoint : public ::testing::TestWithParam<dmtree::FlushPoint> {};

TEST_P(DmtreeFlushPoint, RemovedIsCaught) {
  dmtree::Options o;
  o.faults.skip_flush.add(GetParam());
  Outcome r = run_dmtree(sim::Coherence::kNone, o);
  print("dmtree", std::string("without ") + std::string(flush_point_name(GetParam())), r);
  EXPECT_TRUE(r.caught()) << r.result.explain();
}

INSTANTIATE_TEST_SUITE_P(Points, DmtreeFlushPoint, ::testing::ValuesIn(dmtree::kFlushPoints),
                         [](const auto& p) { return std::string(flush_point_name(p.param)); });
#endif

}  // namespace
}  // namespace dmrt::coherence_test
