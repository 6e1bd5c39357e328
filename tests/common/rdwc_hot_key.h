// A hot key on sim for the RDWC tests of CHIME, Sherman and ROLEX (dmrt/indexes/common/rdwc.h):
// every client of a compute node searches (or updates) the same key; the figures say how many
// remote operations ran, and what one costs when it runs alone.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "../sherman/kv_checks.h"
#include "../sim/small_cluster.h"
#include "dmrt/policies/sim/cluster.h"

namespace dmrt::testing {

struct HotKeyFigures {
  uint64_t ops = 0;               // searches or updates the clients ran
  uint64_t round_trips = 0;       // theirs, all clients together
  uint64_t reads = 0;             // READ verbs among them
  uint64_t solo_round_trips = 0;  // one warm search (update) by a lone client
  uint64_t solo_reads = 0;
  double delegated = 0, combined = 0, direct = 0;  // index_stats rdwc_* over the compute nodes
  bool values_ok = true;  // every search returned the loaded value (searches)
  std::string final_value;
  std::set<std::string> last_values;  // each client's last update (updates)
  bool operator==(const HotKeyFigures&) const = default;
};

// `make(setups)` returns the index object of each compute node (setups[i] is homed on node i;
// an index shared by every node may be returned once per node). 64 keys are loaded; the hot key
// is one of them. Each client runs `per_client` searches, or updates with values of its own.
template <class Index, class Make>
HotKeyFigures hot_key_run(unsigned nodes, unsigned per_node, bool updates, unsigned per_client,
                          Make make) {
  sim::Cluster cluster{sim::small_test_cluster(nodes, per_node)};
  auto cns = cluster.compute_nodes();
  std::vector<std::unique_ptr<sim::SimClient>> setup;
  std::vector<sim::SimClient*> setups;
  for (unsigned i = 0; i < nodes; ++i) {
    setup.push_back(std::make_unique<sim::SimClient>(cluster.endpoint(cns[i], 900 + i)));
    setups.push_back(setup.back().get());
  }
  std::vector<std::shared_ptr<Index>> idx = make(setups);
  const Key hot = key_of_rank(7);
  {
    auto h = idx[0]->handle(*setups[0]);
    for (size_t r = 0; r < 64; ++r)
      EXPECT_TRUE(h.insert(key_of_rank(r), value_for(key_of_rank(r), 0, 0)));
  }
  const std::string loaded = value_for(hot, 0, 0);
  HotKeyFigures f;
  std::string v;
  for (unsigned i = 0; i < nodes; ++i) {  // warm each node's caches (and hotspot buffer)
    auto h = idx[i]->handle(*setups[i]);
    for (int rep = 0; rep < 2; ++rep) EXPECT_TRUE(h.search(hot, v));
    if (updates) {
      EXPECT_TRUE(h.update(hot, loaded));
    }
  }
  {  // one warm operation, alone
    auto h = idx[0]->handle(*setups[0]);
    VerbCounters before = setups[0]->counters().total;
    EXPECT_TRUE(updates ? h.update(hot, loaded) : h.search(hot, v));
    VerbCounters d = setups[0]->counters().total - before;
    f.solo_round_trips = d.round_trips;
    f.solo_reads = d.count(VerbKind::kRead);
  }
  std::map<NodeId, size_t> node_index;
  for (unsigned i = 0; i < nodes; ++i) node_index[cns[i]] = i;
  std::vector<std::string> last(nodes * per_node);
  cluster.reset_stats();
  cluster.run([&](sim::SimClient& c, const sim::WorkerInfo& w) {
    auto h = idx[node_index.at(w.home)]->handle(c);
    std::string out;
    for (unsigned i = 0; i < per_client; ++i) {
      if (updates) {
        last[w.index] = value_for(hot, w.index + 1, i);
        EXPECT_TRUE(h.update(hot, last[w.index]));
      } else if (!h.search(hot, out) || out != loaded) {
        f.values_ok = false;
      }
    }
  });
  const VerbCounters& t = cluster.last_counters().total;
  f.ops = uint64_t{nodes} * per_node * per_client;
  f.round_trips = t.round_trips;
  f.reads = t.count(VerbKind::kRead);
  std::set<const Index*> seen;
  for (auto& x : idx) {
    if (!seen.insert(x.get()).second) continue;
    auto s = x->stats();
    f.delegated += s["rdwc_delegated"];
    f.combined += s["rdwc_combined"];
    f.direct += s["rdwc_direct"];
  }
  auto h = idx[0]->handle(*setups[0]);
  EXPECT_TRUE(h.search(hot, f.final_value));
  if (updates) f.last_values.insert(last.begin(), last.end());
  return f;
}

// What every index's RDWC test asserts of a search run and an update run with RDWC on (`on`) and
// off (`off`): the runs are deterministic; each remote operation costs what a lone one costs, so
// the round trips (READs) are exactly those of the operations that did not share a result; most
// did share; the last value standing is some client's last update (the combined write of the
// last queued value).
inline void expect_rdwc_figures(const HotKeyFigures& on, const HotKeyFigures& off, bool updates) {
  std::printf("%s x %llu: rdwc on %llu round trips (%llu READs, %.0f shared), off %llu (%llu)\n",
              updates ? "updates" : "searches", (unsigned long long)on.ops,
              (unsigned long long)on.round_trips, (unsigned long long)on.reads,
              updates ? on.combined : on.delegated, (unsigned long long)off.round_trips,
              (unsigned long long)off.reads);
  EXPECT_EQ(off.delegated + off.combined + off.direct, 0);
  const double shared = updates ? on.combined : on.delegated;
  EXPECT_EQ(updates ? on.delegated : on.combined, 0);
  EXPECT_EQ(on.direct, 0);  // one key: its slot is never held by another
  EXPECT_GE(shared, 0.5 * double(on.ops));
  const uint64_t remote = on.ops - static_cast<uint64_t>(shared);
  EXPECT_EQ(on.round_trips, remote * on.solo_round_trips);
  EXPECT_EQ(on.reads, remote * on.solo_reads);
  EXPECT_GE(off.round_trips, off.ops * off.solo_round_trips);
  EXPECT_LE(2 * on.round_trips, off.round_trips);
  if (updates) {
    EXPECT_EQ(on.last_values.count(on.final_value), 1u) << on.final_value;
    EXPECT_EQ(off.last_values.count(off.final_value), 1u) << off.final_value;
  } else {
    EXPECT_EQ(off.round_trips, off.ops * off.solo_round_trips);  // searches never retry here
    EXPECT_TRUE(on.values_ok);
    EXPECT_TRUE(off.values_ok);
  }
}

}  // namespace dmrt::testing
