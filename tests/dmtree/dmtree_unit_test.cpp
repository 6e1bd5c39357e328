// DMTree, single client per node: std::map differential runs, per-role verb counts, membership
// changes.
#include <gtest/gtest.h>

#include <cstdio>

#include "../runtime/test_cluster.h"
#include "../sherman/kv_checks.h"
#include "dmrt/indexes/dmtree/dmtree.h"

namespace dmrt {
namespace {

using DTree = dmtree::Tree<ShmTransport>;
using testing::key_of_rank;
using testing::value_for;

struct Cluster {
  std::shared_ptr<shm::Pool> pool;
  std::vector<NodeId> cns;
  std::vector<std::unique_ptr<testing::ShmClient>> clients;
  explicit Cluster(unsigned compute_nodes) {
    pool = testing::small_pool(1, compute_nodes, uint64_t{256} << 20);
    cns = pool->config().compute_nodes();
    for (unsigned i = 0; i < compute_nodes; ++i)
      clients.push_back(std::make_unique<testing::ShmClient>(shm::Endpoint(pool, cns[i], 600 + i)));
  }
  testing::ShmClient& c(unsigned i) { return *clients[i]; }
};

dmtree::Options small(bool collab) {
  dmtree::Options o;
  o.collaborative = collab;
  o.leaf_span = 8;
  o.internal_span = 6;
  return o;
}

// Alternates every operation between two handles on two compute nodes (cached copies, owners).
template <class H>
struct Alternating {
  H& a;
  H& b;
  unsigned i = 0;
  H& next() { return (i++ % 2) ? a : b; }
  bool search(Key k, std::string& out) { return next().search(k, out); }
  bool insert(Key k, std::string_view v) { return next().insert(k, v); }
  bool update(Key k, std::string_view v) { return next().update(k, v); }
  bool remove(Key k) { return next().remove(k); }
  void scan(Key f, size_t n, std::vector<std::pair<Key, std::string>>& rows) {
    next().scan(f, n, rows);
  }
};

TEST(DmtreeUnit, DifferentialCollaborative) {
  Cluster cl(1);
  auto t = DTree::create(cl.c(0), small(true));
  auto h = t->handle(cl.c(0));
  testing::differential_run(h, 20000, 3000, 7);
  EXPECT_GT(t->stats()["height"], 2);
}

TEST(DmtreeUnit, DifferentialBaselineNoFilter) {
  Cluster cl(1);
  auto o = small(false);
  o.scan_filter = false;
  auto t = DTree::create(cl.c(0), o);
  auto h = t->handle(cl.c(0));
  testing::differential_run(h, 15000, 2000, 8);
}

TEST(DmtreeUnit, DifferentialTwoComputeNodesTinyCache) {
  Cluster cl(2);
  auto o = small(true);
  o.cache_bytes = 2000;
  auto t0 = DTree::create(cl.c(0), o);
  auto t1 = DTree::attach(cl.c(1), o);
  auto h0 = t0->handle(cl.c(0));
  auto h1 = t1->handle(cl.c(1));
  Alternating<DTree::Handle> alt{h0, h1};
  testing::differential_run(alt, 20000, 2500, 9);
  EXPECT_GT(t0->stats()["local_copy_hits"] + t1->stats()["local_copy_hits"], 0);
}

TEST(DmtreeUnit, WrongHomeNodeIsAClearError) {
  Cluster cl(2);
  auto t = DTree::create(cl.c(0), small(true));
  EXPECT_THROW(t->handle(cl.c(1)), ConfigError);
  auto h = t->handle(cl.c(0));
  EXPECT_THROW(h.insert(1, std::string(9, 'x')), LimitError);
  auto other = small(true);
  other.entry_versions = false;  // the bottom level's layout must be the creator's
  EXPECT_THROW(DTree::attach(cl.c(1), other), ConfigError);
}

// --- verbs per operation
// --------------------------------------------------------------------------

struct PerOp {
  uint64_t ops = 0, mem = 0, cmp = 0, mem_rt = 0, collisions = 0, skipped = 0;
  uint64_t cmp_rt = 0, local = 0;  // compute-node round trips; accesses to the client's own node
  double mem_per_op() const { return ops ? double(mem) / ops : 0; }
  double cmp_per_op() const { return ops ? double(cmp) / ops : 0; }
};

// Runs op(i) n times on handle h and checks that each one cost `mem_expected` memory-node verbs
// plus one READ per fingerprint false positive (ops that split a leaf are excluded and counted).
template <class H, class F>
PerOp measure(testing::ShmClient& c, H& h, size_t n, uint64_t mem_expected, F op) {
  PerOp r;
  for (size_t i = 0; i < n; ++i) {
    Counters before = c.counters();
    uint64_t coll = h.fp_collisions(), splits = h.splits();
    op(i);
    if (h.splits() != splits) {
      ++r.skipped;
      continue;
    }
    uint64_t mem = c.counters().role(NodeRole::kMemory).total_verbs() -
                   before.role(NodeRole::kMemory).total_verbs();
    uint64_t cmp = c.counters().role(NodeRole::kCompute).total_verbs() -
                   before.role(NodeRole::kCompute).total_verbs();
    uint64_t dc = h.fp_collisions() - coll;
    EXPECT_EQ(mem, mem_expected + dc) << "op " << i;
    r.cmp_rt += c.counters().role(NodeRole::kCompute).round_trips -
                before.role(NodeRole::kCompute).round_trips;
    r.local += c.counters().total.local_accesses - before.total.local_accesses;
    r.ops++;
    r.mem += mem - dc;
    r.cmp += cmp;
    r.collisions += dc;
  }
  return r;
}

void verb_counts(bool collab, uint64_t search, uint64_t update, uint64_t insert) {
  Cluster cl(2);
  dmtree::Options o;
  o.collaborative = collab;
  auto t0 = DTree::create(cl.c(0), o);
  auto t1 = DTree::attach(cl.c(1), o);
  auto h0 = t0->handle(cl.c(0));
  auto h1 = t1->handle(cl.c(1));
  const size_t n = 4000;
  for (size_t i = 0; i < n; ++i)
    ASSERT_TRUE(h0.insert(key_of_rank(i), value_for(key_of_rank(i), 0, 0)));
  std::string out;
  for (size_t i = 0; i < n; ++i)
    ASSERT_TRUE(h1.search(key_of_rank(i), out));  // warm cache + copies
  auto& c = cl.c(1);
  PerOp s = measure(c, h1, 1000, search, [&](size_t i) {
    ASSERT_TRUE(h1.search(key_of_rank(i * 3 % n), out));
    ASSERT_EQ(out, value_for(key_of_rank(i * 3 % n), 0, 0));
  });
  PerOp u = measure(c, h1, 1000, update, [&](size_t i) {
    ASSERT_TRUE(h1.update(key_of_rank(i * 7 % n), value_for(key_of_rank(i * 7 % n), 1, i)));
  });
  PerOp in = measure(c, h1, 600, insert, [&](size_t i) {
    ASSERT_TRUE(h1.insert(key_of_rank(n + i), value_for(key_of_rank(n + i), 1, 0)));
  });
  std::printf(
      "%s: memory-node verbs/op search %.2f update %.2f insert %.2f; compute-node verbs/op "
      "search %.2f update %.2f insert %.2f (fp false positives %lu/%lu/%lu, split inserts %lu)\n",
      collab ? "collaborative" : "FP-B+-tree baseline", s.mem_per_op(), u.mem_per_op(),
      in.mem_per_op(), s.cmp_per_op(), u.cmp_per_op(), in.cmp_per_op(), (unsigned long)s.collisions,
      (unsigned long)u.collisions, (unsigned long)in.collisions, (unsigned long)in.skipped);
  std::printf(
      "  compute-node round trips/op search %.2f update %.2f insert %.2f; local accesses/op "
      "search %.2f update %.2f insert %.2f\n",
      double(s.cmp_rt) / s.ops, double(u.cmp_rt) / u.ops, double(in.cmp_rt) / in.ops,
      double(s.local) / s.ops, double(u.local) / u.ops, double(in.local) / in.ops);
  EXPECT_LT(in.skipped, 60u);
  if (!collab) {
    EXPECT_EQ(s.cmp + u.cmp + in.cmp, 0u);
    EXPECT_EQ(s.local + u.local + in.local, 0u);
  } else {
    EXPECT_EQ(u.cmp, 3 * u.ops);    // lock CAS + table READ (one round trip), unlock WRITE
    EXPECT_EQ(in.cmp, 3 * in.ops);  // lock CAS + table READ, table WRITE with embedded unlock
    EXPECT_EQ(s.cmp, s.ops);        // the local copy (or the primary) READ
    // The paper reads fingerprint tables from local memory: a search's table READ is this
    // node's copy, a local access, never a round trip.
    EXPECT_EQ(s.local, s.ops);
    EXPECT_EQ(s.cmp_rt, 0u);
    // A write's lock CAS + table READ is an atomic, so it keeps the network path even on the
    // own node (loopback); its unlocking WRITE is local where this node holds the primary.
    EXPECT_EQ(u.cmp_rt + u.local, 2 * u.ops);
    EXPECT_EQ(in.cmp_rt + in.local, 2 * in.ops);
    EXPECT_GT(u.local, 0u);
    EXPECT_GT(in.local, 0u);
  }
}

TEST(DmtreeUnit, MemoryNodeVerbsCollaborative) {
  verb_counts(true, 1, 2, 1);
}
TEST(DmtreeUnit, MemoryNodeVerbsBaseline) {
  verb_counts(false, 2, 5, 4);
}

// --- membership
// -------------------------------------------------------------------------------------

TEST(DmtreeUnit, RingSpreadsAndMovesLittle) {
  collab::Ring r2(0b0110, 64), r3(0b1110, 64);
  std::map<NodeId, int> share;
  int moved = 0;
  for (uint64_t id = 0; id < 30000; ++id) {
    share[r3.owner(id)]++;
    if (r2.owner(id) != r3.owner(id)) {
      ++moved;
      EXPECT_EQ(r3.owner(id), 3);  // only the joining node takes tables
    }
  }
  for (NodeId n : {1, 2, 3}) EXPECT_GT(share[n], 6000) << n;
  EXPECT_GT(moved, 6000);
  EXPECT_LT(moved, 14000);
}

TEST(DmtreeUnit, JoinAndLeaveMoveOwnershipAndRebuild) {
  Cluster cl(3);
  auto o = small(true);
  auto t0 = DTree::create(cl.c(0), o);
  auto t1 = DTree::attach(cl.c(1), o);
  auto h0 = t0->handle(cl.c(0));
  auto h1 = t1->handle(cl.c(1));
  const size_t n = 3000;
  for (size_t i = 0; i < n; ++i)
    ASSERT_TRUE(h1.insert(key_of_rank(i), value_for(key_of_rank(i), 0, 0)));
  auto t2 = DTree::attach(cl.c(2), o);  // join: node 2 takes some tables over on first use
  auto h2 = t2->handle(cl.c(2));
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(h2.search(key_of_rank(i), out)) << i;
    ASSERT_EQ(out, value_for(key_of_rank(i), 0, 0));
  }
  for (size_t i = 0; i < n; i += 2)
    ASSERT_TRUE(h0.update(key_of_rank(i), value_for(key_of_rank(i), 2, 0)));
  EXPECT_GT(t2->stats()["takeovers"] + t0->stats()["takeovers"], 0);
  t1->leave(cl.c(1));              // node 1 departs
  t0->service().refresh(cl.c(0));  // peers learn lazily (MOVED, liveness checks); force it here
  for (uint64_t id = 0; id < 200; ++id) EXPECT_NE(t0->service().owner(id), cl.cns[1]);
  for (size_t i = 0; i < n; ++i) {
    auto& h = i % 2 ? h0 : h2;
    ASSERT_TRUE(h.search(key_of_rank(i), out)) << i;
    ASSERT_EQ(out, value_for(key_of_rank(i), i % 2 ? 0 : 2, 0)) << i;
    ASSERT_TRUE(h.update(key_of_rank(i), value_for(key_of_rank(i), 3, 0)));
  }
  for (size_t i = n; i < n + 500; ++i)
    ASSERT_TRUE(h2.insert(key_of_rank(i), value_for(key_of_rank(i), 0, 0)));
  std::vector<std::pair<Key, std::string>> rows;
  h0.scan(0, 10 * n, rows);
  EXPECT_EQ(rows.size(), n + 500);
  std::printf("takeovers %.0f+%.0f, fences %.0f+%.0f\n", t0->stats()["takeovers"],
              t2->stats()["takeovers"], t0->stats()["fences"], t2->stats()["fences"]);
}

TEST(DmtreeUnit, LockOfADepartedNodeIsRecovered) {
  Cluster cl(2);
  auto o = small(true);
  auto t0 = DTree::create(cl.c(0), o);
  auto t1 = DTree::attach(cl.c(1), o);
  auto h0 = t0->handle(cl.c(0));
  auto h1 = t1->handle(cl.c(1));
  for (size_t i = 0; i < 500; ++i)
    ASSERT_TRUE(h0.insert(key_of_rank(i), value_for(key_of_rank(i), 0, 0)));
  Key k = key_of_rank(17);
  h1.abandon_lock_for_test(k);  // a client of node 1 dies holding k's leaf lock
  t1->leave(cl.c(1));
  ASSERT_TRUE(h0.update(k, value_for(k, 5, 5)));
  std::string out;
  ASSERT_TRUE(h0.search(k, out));
  EXPECT_EQ(out, value_for(k, 5, 5));
  EXPECT_GE(t0->stats()["recovered_locks"], 1);
}

#ifdef DMRT_FAULT_INJECTION
TEST(DmtreeUnit, CheckerCatchesLostInserts) {
  Cluster cl(1);
  auto o = small(true);
  o.faults.ack_without_write = true;
  auto t = DTree::create(cl.c(0), o);
  auto h = t->handle(cl.c(0));
  testing::WorkerLog log;
  for (Key k = 1; k < 50; ++k)
    if (h.insert(k, value_for(k, 0, 0))) log.written[k].insert(value_for(k, 0, 0));
  std::string err = testing::final_state_error(h, std::vector<testing::WorkerLog>{log}, 100);
  EXPECT_NE(err.find("missing"), std::string::npos) << err;
}
#endif

// A search's fingerprint filter (Table::slots_with_fp, eight fingerprints per word) names the
// same slots in the same order as a byte-by-byte comparison, for every span up to 64, with the
// bytes after the span in the last word holding the fingerprint sought (they must not count).
TEST(DmtreeUnit, FingerprintFilterMatchesByteLoop) {
  uint64_t x = 1;
  size_t matches = 0;
  for (uint32_t span = 1; span <= 64; ++span) {
    dmtree::Geometry g(span, 8);
    dmtree::Table<> t(g);
    for (uint32_t round = 0; round < 20; ++round) {
      for (uint32_t i = 0; i < span; ++i) {
        x = mix64(x + 1);
        t.set_fp(i, static_cast<uint8_t>(round % 2 ? x : x % 3));  // few values: many matches
      }
      for (uint32_t f = 0; f < 256; f += round % 2 ? 1 : 85) {
        for (uint32_t i = span; i < 8 * g.fp_words(); ++i) t.set_fp(i, static_cast<uint8_t>(f));
        uint32_t want[64], got[64];
        uint32_t n = 0;
        for (uint32_t i = 0; i < span; ++i)
          if (t.fp(i) == f) want[n++] = i;
        ASSERT_EQ(t.slots_with_fp(span, static_cast<uint8_t>(f), got), n) << span << " " << f;
        for (uint32_t j = 0; j < n; ++j) ASSERT_EQ(got[j], want[j]) << span << " " << f;
        matches += n;
      }
    }
  }
  EXPECT_GT(matches, 10000u);
}

}  // namespace
}  // namespace dmrt
