// DMTree's flush points (dmrt/indexes/dmtree/detail/options.h, FlushPoint) proved on sim's
// coherence model: all in place, the history is linearizable under `none`; any one removed, the
// run is caught. Each compute node has its tree (attach), and the fingerprint tables live on the
// compute nodes (collaborative), so a table's owner reaches it through its own host's cache and
// the other nodes through theirs. The leaf and table points are proved on hot keys; the
// structural ones (root word, internal nodes) on a run that grows the tree; the membership ones on
// a run that the other compute nodes join while the first one's clients already run (each join is
// a membership change, timed: its log entry and the members' re-reads go through the caches).
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
  dmtree::Options options;
  std::map<NodeId, std::shared_ptr<DmTree>> by_node;
  std::map<NodeId, bool> joining;  // a client of that node is attaching it (within the run)
  std::string join_error;          // what a join threw: its node's other clients stop too
};

enum class Mode { kHot, kGrowing, kJoining };

Mode mode_for(dmtree::FlushPoint p) {
  using P = dmtree::FlushPoint;
  if (p == P::kRootInvalidate || p == P::kInternalInvalidate || p == P::kInternalWriteBack)
    return Mode::kGrowing;
  if (p == P::kMembershipInvalidate) return Mode::kJoining;
  return Mode::kHot;
}

Outcome run_dmtree(sim::Coherence coherence, dmtree::Options o = {}, Mode mode = Mode::kHot) {
  Shape s = mode == Mode::kGrowing ? growing_shape() : Shape{};
  if (mode == Mode::kGrowing) {
    o.leaf_span = 8;
    o.internal_span = 4;
  }
  o.value_size = 16;
  return run(
      s, sim_options(s, coherence),
      [&](sim::SimClient& setup, sim::Cluster& cluster) {
        auto t = std::make_shared<DmTrees>();
        t->options = o;
        t->by_node[setup.home_node()] = DmTree::create(setup, o);
        if (mode == Mode::kJoining) return t;  // the others join in the run (below)
        for (NodeId n : cluster.compute_nodes()) {
          if (t->by_node.count(n)) continue;
          sim::SimClient c(cluster.endpoint(n, 998));
          t->by_node[n] = DmTree::attach(c, o);
        }
        return t;
      },
      [](DmTrees& t, sim::SimClient& c) {
        const NodeId n = c.home_node();
        if (!t.by_node.count(n)) {  // joining: the node's first client attaches, the others wait
          if (!t.joining[n]) {
            t.joining[n] = true;
            try {
              t.by_node[n] = DmTree::attach(c, t.options);
            } catch (const std::exception& e) {
              t.join_error = e.what();
              throw;
            }
          }
          while (!t.by_node.count(n)) {
            if (!t.join_error.empty()) throw Error("dmtree: a join failed: " + t.join_error);
            c.pause();
          }
        }
        return t.by_node.at(n)->handle(c);
      });
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

TEST(DmtreeCoherence, AGrowingTreeAndJoiningNodesAreLinearizableUnderNone) {
  for (Mode m : {Mode::kGrowing, Mode::kJoining}) {
    Outcome r = run_dmtree(sim::Coherence::kNone, {}, m);
    print("dmtree", m == Mode::kGrowing ? "all points, growing" : "all points, joining", r);
    EXPECT_FALSE(r.stuck);
    EXPECT_EQ(r.error, "");
    EXPECT_TRUE(r.result.linearizable) << r.result.explain();
  }
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
  Outcome r = run_dmtree(sim::Coherence::kNone, o, mode_for(GetParam()));
  print("dmtree", std::string("without ") + std::string(flush_point_name(GetParam())), r);
  EXPECT_TRUE(r.caught()) << r.result.explain();
}

INSTANTIATE_TEST_SUITE_P(Points, DmtreeFlushPoint, ::testing::ValuesIn(dmtree::kFlushPoints),
                         [](const auto& p) { return std::string(flush_point_name(p.param)); });
#endif

}  // namespace
}  // namespace dmrt::coherence_test
