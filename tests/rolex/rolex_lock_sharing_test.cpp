// ROLEX lock sharing inside a compute node (options.h `lock_sharing`, §3.4: "other threads of
// C_node can leverage the acquired lock to modify the same leaves") on sim: the clients of a
// compute node update keys of one chain; a handed-over lock costs no CAS and no unlock WRITE.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../sherman/kv_checks.h"
#include "../sim/small_cluster.h"
#include "dmrt/indexes/rolex/rolex.h"
#include "dmrt/policies/sim/cluster.h"

namespace dmrt {
namespace {

using RolexLsIndex = rolex::Index<SimTransport>;

struct ChainUpdateFigures {
  uint64_t ops = 0, round_trips = 0, cas = 0, writes = 0, reads = 0;
  uint64_t solo_round_trips = 0, solo_reads = 0;
  double handovers = 0, lock_retries = 0;
  bool finals_ok = true;  // every key ends with the last value its client wrote
  bool operator==(const ChainUpdateFigures&) const = default;
};

// `nodes` compute nodes x 8 clients; client i of every node updates key kChain[i] (eight keys of
// one 16-slot leaf, so one chain and one LT lock) `per_client` times. One Index for all nodes.
ChainUpdateFigures chain_updates(bool sharing, unsigned nodes, unsigned per_client) {
  constexpr unsigned kPerNode = 8;
  sim::Cluster cluster{sim::small_test_cluster(nodes, kPerNode)};
  auto cns = cluster.compute_nodes();
  sim::SimClient setup(cluster.endpoint(cns[0], 900));
  rolex::Options o;
  o.lock_sharing = sharing;
  o.compute_retrain_fallback = true;  // no retraining service here
  std::vector<Key> bulk;
  for (Key k = 1; k <= 2000; ++k) bulk.push_back(k * 16);
  auto x = RolexLsIndex::create(setup, o, bulk);
  auto key_of = [&](unsigned i) { return bulk[32 + i]; };  // leaf 2 (16 pairs per leaf)
  ChainUpdateFigures f;
  {  // warm the model cache, then one update alone
    auto h = x->handle(setup);
    std::string v;
    EXPECT_TRUE(h.search(key_of(0), v));
    VerbCounters before = setup.counters().total;
    EXPECT_TRUE(h.update(key_of(0), "solo"));
    VerbCounters d = setup.counters().total - before;
    f.solo_round_trips = d.round_trips;
    f.solo_reads = d.count(VerbKind::kRead);
  }
  const double retries_before = x->stats()["lock_retries"];
  std::vector<std::string> last(nodes * kPerNode);
  cluster.reset_stats();
  cluster.run([&](sim::SimClient& c, const sim::WorkerInfo& w) {
    auto h = x->handle(c);
    const unsigned slot = w.index % kPerNode;
    for (unsigned i = 0; i < per_client; ++i) {
      // Clients of different nodes with the same slot share a key: the last writer wins.
      last[w.index] = testing::value_for(key_of(slot), w.index + 1, i);
      EXPECT_TRUE(h.update(key_of(slot), last[w.index]));
    }
  });
  const VerbCounters& t = cluster.last_counters().total;
  f.ops = uint64_t{nodes} * kPerNode * per_client;
  f.round_trips = t.round_trips;
  f.cas = t.count(VerbKind::kCas);
  f.writes = t.count(VerbKind::kWrite);
  f.reads = t.count(VerbKind::kRead);
  auto s = x->stats();
  f.handovers = sharing ? s["handovers"] : 0;
  f.lock_retries = s["lock_retries"] - retries_before;
  auto h = x->handle(setup);
  for (unsigned slot = 0; slot < kPerNode; ++slot) {
    std::string v;
    EXPECT_TRUE(h.search(key_of(slot), v));
    bool any = false;
    for (unsigned n = 0; n < nodes; ++n) any = any || v == last[n * kPerNode + slot];
    f.finals_ok = f.finals_ok && any;
  }
  return f;
}

TEST(RolexLockSharing, DefaultIsOnAsThePaper) {
  EXPECT_TRUE(rolex::Options{}.lock_sharing);
  EXPECT_EQ(rolex::Options{}.handover_max, 8u);
}

// One compute node x 8 clients x 40 updates of eight keys of one chain. A lone update costs
// 4 round trips (READ as a search ; CAS ; READ chain ; WRITE leaf + WRITE unlock). With lock
// sharing the local queue means the remote CAS never fails, and every handed-over update skips
// the CAS round trip and the unlock WRITE: exactly 3 round trips for those, 4 for the others.
TEST(RolexLockSharing, HandedOverUpdatesSkipTheRemoteLock) {
  auto on = chain_updates(true, 1, 40), off = chain_updates(false, 1, 40);
  EXPECT_EQ(on, chain_updates(true, 1, 40));  // deterministic
  std::printf(
      "lock sharing: %llu updates, on %llu round trips %llu CAS (%.0f handovers), off "
      "%llu round trips %llu CAS (%.0f retries)\n",
      (unsigned long long)on.ops, (unsigned long long)on.round_trips, (unsigned long long)on.cas,
      on.handovers, (unsigned long long)off.round_trips, (unsigned long long)off.cas,
      off.lock_retries);
  ASSERT_EQ(on.solo_round_trips, 4u);
  const uint64_t handed = static_cast<uint64_t>(on.handovers);
  EXPECT_GE(handed, on.ops / 2);
  EXPECT_LE(handed, on.ops * 8 / 9 + 1);  // at most 8 hand-overs in a row (handover_max)
  EXPECT_EQ(on.lock_retries, 0);          // the node's writers queue locally, never remotely
  EXPECT_EQ(on.cas, on.ops - handed);     // one CAS per remote acquisition
  EXPECT_EQ(on.round_trips, 3 * on.ops + (on.ops - handed));
  EXPECT_EQ(on.writes, on.ops + (on.ops - handed));  // leaf WRITE; unlock only when released
  EXPECT_EQ(on.reads, on.ops * (on.solo_reads));     // search batch + chain re-read, as alone
  EXPECT_TRUE(on.finals_ok);
  // Off: every update CASes the LT entry; the clients of the node contend for it remotely.
  EXPECT_EQ(off.handovers, 0);
  EXPECT_GT(off.lock_retries, 0);
  EXPECT_EQ(off.cas, off.ops + static_cast<uint64_t>(off.lock_retries));
  EXPECT_GE(off.round_trips, off.ops * off.solo_round_trips);
  EXPECT_LT(on.round_trips * 4, off.round_trips * 3);
  EXPECT_TRUE(off.finals_ok);
}

// Two compute nodes share one Index object: each has its own lock table (a lock is handed over
// only inside the node that acquired it), the nodes contend through the LT entry, and every key
// ends with one of its writers' last values.
TEST(RolexLockSharing, PerComputeNodeTablesUnderCrossNodeContention) {
  auto on = chain_updates(true, 2, 30);
  EXPECT_EQ(on, chain_updates(true, 2, 30));
  EXPECT_TRUE(on.finals_ok);
  EXPECT_GT(on.handovers, 0);
  EXPECT_EQ(on.cas,
            on.ops - static_cast<uint64_t>(on.handovers) + static_cast<uint64_t>(on.lock_retries));
  auto off = chain_updates(false, 2, 30);
  EXPECT_TRUE(off.finals_ok);
  EXPECT_LT(on.round_trips, off.round_trips);
}

}  // namespace
}  // namespace dmrt
