// ROLEX's flush points (dmrt/indexes/rolex/detail/options.h, FlushPoint) proved on sim's coherence
// model: all in place, the history is linearizable under `none`; any one removed, the run is
// caught. Each compute node has its index (attach: its own model cache), and the retraining runs
// as the paper's, a service on the memory node, whose accesses go through that node's own cache.
// Two-pair leaves and a retraining threshold of 3 synonym slots make the hot keys grow chains and
// get retrained many times in a run, so that every point has work to do.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coherence_run.h"
#include "dmrt/indexes/rolex/rolex.h"

namespace dmrt::coherence_test {
namespace {

using RolexIndex = rolex::Index<SimTransport>;

// One index object per compute node, and the memory node's retraining service.
struct Rolex {
  std::map<NodeId, std::shared_ptr<RolexIndex>> by_node;
  RunService service;
};

struct RolexRun {
  Outcome out;
  double model_refreshes = 0;  // models the compute nodes loaded (retrainings replace them)
};

RolexRun run_rolex(sim::Coherence coherence, rolex::Options o = {}, rolex::ServiceOptions so = {}) {
  Shape s;
  // 64 keys and 1,000 operations per client: without the service's CirQ reads its synonym table
  // fills up (255 synonym leaves) within the run, and stale SLT entries reach other hosts.
  s.keys = 64;
  s.ops = 1000;
  o.value_size = 16;
  o.leaf_slots = 2;
  o.retrain_threshold = 3;
  o.key_space = s.keys;
  so.idle_sleep_us = 0;
  RolexRun r;
  std::string service_error;
  std::vector<std::shared_ptr<RolexIndex>> indexes;  // for their figures after the run
  r.out = run(
      s, sim_options(s, coherence),
      [&](sim::SimClient& setup, sim::Cluster& cluster) {
        auto x = std::make_shared<Rolex>();
        x->by_node[setup.home_node()] = RolexIndex::create(setup, o);
        for (NodeId n : cluster.compute_nodes()) {
          if (x->by_node.count(n)) continue;
          sim::SimClient c(cluster.endpoint(n, 998));
          x->by_node[n] = RolexIndex::attach(c, o);
        }
        for (auto& [n, i] : x->by_node) indexes.push_back(i);
        x->service.failure = &service_error;
        x->service.host = std::make_unique<sim::ServiceHost>(
            cluster, cluster.memory_nodes().front(), 1,
            [so](ServiceContext<SimTransport>& ctx) { rolex::retrain_service(ctx, so); });
        return x;
      },
      [](Rolex& x, sim::SimClient& c) { return x.by_node.at(c.home_node())->handle(c); });
  r.out.service_error = service_error;
  for (auto& i : indexes) r.model_refreshes += i->stats()["model_refreshes"];
  return r;
}

TEST(RolexCoherence, AllPointsAreLinearizableUnderNone) {
  RolexRun r = run_rolex(sim::Coherence::kNone);
  print("rolex", "all points", r.out);
  std::printf("[ coherence] rolex    %.0f models loaded by the compute nodes\n", r.model_refreshes);
  // The retraining service replaced models during the run (each node loads the first one).
  EXPECT_GT(r.model_refreshes, 3.0);
  // Deterministic: the same run flushes the same lines.
  RolexRun again = run_rolex(sim::Coherence::kNone);
  EXPECT_EQ(again.out.counts.lines_invalidated, r.out.counts.lines_invalidated);
  EXPECT_EQ(again.out.counts.lines_written_back, r.out.counts.lines_written_back);
  EXPECT_FALSE(r.out.stuck);
  EXPECT_EQ(r.out.error, "");
  EXPECT_EQ(r.out.service_error, "");
  EXPECT_TRUE(r.out.result.linearizable) << r.out.result.explain();
  EXPECT_GT(r.out.counts.lines_invalidated, 0u);
  EXPECT_GT(r.out.counts.lines_written_back, 0u);
}

// Indirect values (KV blocks the leaves point to; the blocks' READ and WRITE are leaf data): the
// same run, linearizable with every point in place.
TEST(RolexCoherence, IndirectValuesAreLinearizableUnderNone) {
  rolex::Options o;
  o.indirect = true;
  RolexRun r = run_rolex(sim::Coherence::kNone, o);
  print("rolex", "all points, indirect", r.out);
  EXPECT_FALSE(r.out.stuck);
  EXPECT_EQ(r.out.error, "");
  EXPECT_EQ(r.out.service_error, "");
  EXPECT_TRUE(r.out.result.linearizable) << r.out.result.explain();
}

TEST(RolexCoherence, CoherentRunFlushesNothing) {
  RolexRun r = run_rolex(sim::Coherence::kCoherent);
  EXPECT_TRUE(r.out.result.linearizable) << r.out.result.explain();
  EXPECT_EQ(
      r.out.counts.lines_invalidated + r.out.counts.lines_written_back + r.out.counts.stale_lines,
      0u);
}

#ifdef DMRT_FAULT_INJECTION
class RolexFlushPoint : public ::testing::TestWithParam<rolex::FlushPoint> {};

// The point is removed on both sides, the compute nodes and the retraining service.
TEST_P(RolexFlushPoint, RemovedIsCaught) {
  rolex::Options o;
  rolex::ServiceOptions so;
  o.faults.skip_flush.add(GetParam());
  so.faults.skip_flush.add(GetParam());
  RolexRun r = run_rolex(sim::Coherence::kNone, o, so);
  print("rolex", std::string("without ") + std::string(flush_point_name(GetParam())), r.out);
  std::printf("[ coherence] rolex    %.0f models loaded by the compute nodes\n", r.model_refreshes);
  EXPECT_TRUE(r.out.caught()) << r.out.result.explain();
}

INSTANTIATE_TEST_SUITE_P(Points, RolexFlushPoint, ::testing::ValuesIn(rolex::kFlushPoints),
                         [](const auto& p) { return std::string(flush_point_name(p.param)); });
#endif

}  // namespace
}  // namespace dmrt::coherence_test
