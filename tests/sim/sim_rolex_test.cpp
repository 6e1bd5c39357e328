// ROLEX on sim with its retraining service as a memory-node service fiber: a narrow-range insert
// storm forces synonym leaves and retrainings, done by the memory node (never by compute clients),
// with nothing lost, and the whole run is deterministic.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "../sherman/kv_checks.h"
#include "dmrt/indexes/rolex/rolex.h"
#include "dmrt/policies/sim/cluster.h"
#include "dmrt/policies/sim/report_json.h"
#include "dmrt/policies/sim/service.h"
#include "small_cluster.h"

namespace dmrt::sim {
namespace {

using RIndex = rolex::Index<SimTransport>;

struct StormResult {
  double retrainings = 0, synonym_leaves = 0, retrain_requests = 0;
  double compute_retrainings = 0, full_slt_waits = 0, model_refreshes = 0;
  uint64_t inserts = 0, searches = 0, end_ns = 0;
  uint64_t service_local_verbs = 0, service_cpu_ns = 0;
  std::string report;  // the sim report as JSON
  bool operator==(const StormResult&) const = default;
};

// Two compute nodes x 4 clients: on each node 2 writers put keys between two adjacent bulk keys
// (one chain of one model group) while 2 readers search keys already acknowledged.
StormResult storm(unsigned per_writer) {
  Options o = small_test_cluster(2, 4);
  Cluster cluster(o);
  auto cns = cluster.compute_nodes();
  const NodeId mem = cluster.memory_nodes().front();
  // Built untimed, before any run.
  SimClient setup0(cluster.endpoint(cns[0], 900)), setup1(cluster.endpoint(cns[1], 901));
  std::vector<Key> bulk;
  for (Key k = 1; k <= 4000; ++k) bulk.push_back(k * 1'000'000);
  rolex::Options
      ro;  // paper geometry; compute_retrain_fallback stays off: only the service retrains
  auto idx0 = RIndex::create(setup0, ro, bulk);
  auto idx1 = RIndex::attach(setup1, ro);
  rolex::ServiceOptions so;
  so.idle_sleep_us = 0;
  ServiceHost service(cluster, mem, 1,
                      [so](ServiceContext<SimTransport>& ctx) { rolex::retrain_service(ctx, so); });
  cluster.reset_stats();

  constexpr unsigned kWriters = 4;
  const Key lo = 2000 * 1'000'000ull;
  auto key_of = [&](unsigned w, size_t i) { return lo + 1 + (i * kWriters + w) * 7; };
  std::vector<size_t> acked(kWriters, 0);
  StormResult res;
  cluster.run([&](SimClient& c, const WorkerInfo& w) {
    auto h = (w.home == cns[0] ? idx0 : idx1)->handle(c);
    if (w.local < 2) {
      unsigned wr = (w.home == cns[0] ? 0 : 2) + w.local;
      for (size_t i = 0; i < per_writer; ++i) {
        Key k = key_of(wr, i);
        ASSERT_TRUE(h.insert(k, testing::value_for(k, wr, 0))) << k;
        acked[wr] = i + 1;
        ++res.inserts;
      }
      return;
    }
    std::mt19937_64 rng(w.index);
    std::string out;
    auto done = [&] {
      for (size_t a : acked)
        if (a < per_writer) return false;
      return true;
    };
    while (!done()) {
      unsigned wr = rng() % kWriters;
      if (size_t n = acked[wr]) {
        Key k = key_of(wr, rng() % n);
        ASSERT_TRUE(h.search(k, out)) << "acknowledged key " << k << " not found";
        ASSERT_EQ(out, testing::value_for(k, wr, 0));
        ++res.searches;
      } else {
        c.pause();
      }
    }
  });
  res.end_ns = cluster.now_ns();
  Report rep = cluster.report();
  res.report = nlohmann::json(rep).dump();
  for (const ServiceReport& s : rep.services)
    if (s.node == mem) res.service_local_verbs = s.local_verbs, res.service_cpu_ns = s.cpu_ns;
  service.stop();

  // Every key is there afterwards (read untimed).
  auto h = idx0->handle(setup0);
  std::string out;
  for (unsigned w = 0; w < kWriters; ++w)
    for (size_t i = 0; i < per_writer; ++i)
      EXPECT_TRUE(h.search(key_of(w, i), out)) << w << "/" << i;
  for (Key k : bulk) EXPECT_TRUE(h.search(k, out)) << k;

  IndexStats s0 = idx0->stats(setup0), s1 = idx1->stats();
  res.retrainings = s0["retrainings"];
  res.synonym_leaves = s0["synonym_leaves"];
  res.retrain_requests = s0["retrain_requests"];
  res.compute_retrainings = s0["compute_retrainings"] + s1["compute_retrainings"];
  res.full_slt_waits = s0["full_slt_waits"] + s1["full_slt_waits"];
  res.model_refreshes = s0["model_refreshes"] + s1["model_refreshes"];
  return res;
}

TEST(SimRolex, MemoryNodeServiceRetrainsInVirtualTimeDeterministically) {
  StormResult a = storm(3000);
  std::printf(
      "rolex on sim, narrow-range storm: %llu inserts, %llu searches in %.3f ms virtual; "
      "retrainings %.0f (requests %.0f, compute-side %.0f), synonym leaves %.0f, full-SLT "
      "waits %.0f, model refreshes %.0f; service: %llu local verbs, %.3f ms CPU\n",
      static_cast<unsigned long long>(a.inserts), static_cast<unsigned long long>(a.searches),
      a.end_ns / 1e6, a.retrainings, a.retrain_requests, a.compute_retrainings, a.synonym_leaves,
      a.full_slt_waits, a.model_refreshes, static_cast<unsigned long long>(a.service_local_verbs),
      a.service_cpu_ns / 1e6);
  EXPECT_EQ(a.inserts, 4u * 3000u);
  EXPECT_GT(a.searches, 0u);
  EXPECT_GE(a.retrainings, 2);          // done by the memory node ...
  EXPECT_EQ(a.compute_retrainings, 0);  // ... never by a compute client
  EXPECT_GT(a.synonym_leaves, 255);
  EXPECT_GT(a.service_local_verbs, 0u);  // the service read and wrote its region locally
  EXPECT_GT(a.service_cpu_ns, 0u);
  StormResult b = storm(3000);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace dmrt::sim
