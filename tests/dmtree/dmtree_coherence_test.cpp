// DMTree cache coherence and leaf merges, single client per node: a stale cached bottom-level
// entry caught by the version check (counts), and delete-heavy runs whose emptied leaves merge,
// checked operation by operation against std::map.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>

#include "../runtime/test_cluster.h"
#include "../sherman/kv_checks.h"
#include "dmrt/indexes/dmtree/dmtree.h"

namespace dmrt {
namespace {

using CoTree = dmtree::Tree<ShmTransport>;
using testing::key_of_rank;
using testing::value_for;

// Compute node A writes; compute node B reads through its private cache.
struct TwoNodes {
  std::shared_ptr<shm::Pool> pool;
  std::unique_ptr<testing::ShmClient> ca, cb;
  std::shared_ptr<CoTree> ta, tb;
  explicit TwoNodes(const dmtree::Options& o) {
    pool = testing::small_pool(1, 2, uint64_t{256} << 20);
    auto cns = pool->config().compute_nodes();
    ca = std::make_unique<testing::ShmClient>(shm::Endpoint(pool, cns[0], 700));
    cb = std::make_unique<testing::ShmClient>(shm::Endpoint(pool, cns[1], 701));
    ta = CoTree::create(*ca, o);
    tb = CoTree::attach(*cb, o);
  }
};

dmtree::Options coherence_options(bool versions) {
  dmtree::Options o;
  o.leaf_span = 8;
  o.internal_span = 6;
  o.entry_versions = versions;
  return o;
}

// Inserts keys below every key in the tree, one by one, until the leftmost leaf splits once;
// returns the last (smallest) key, which the split keeps in the left half.
Key split_leftmost(CoTree::Handle& h, Key& next) {
  uint64_t before = h.splits();
  while (h.splits() == before) {
    --next;
    EXPECT_TRUE(h.insert(next, value_for(next, 0, 0)));
  }
  EXPECT_EQ(h.splits(), before + 1);
  return next;
}

struct Seen {
  double mismatches, invalidations, misses, reads;
  explicit Seen(CoTree& t) {
    auto s = t.stats();
    mismatches = s["version_mismatches"];
    invalidations = s["cache_invalidations"];
    misses = s["cache_misses"];
    reads = s["internal_reads"];
  }
};

// A splits the leaf that B's cached bottom-level entry names; the key B then asks for stays in
// that leaf, so fences alone would not notice. With entry versions the table's version differs
// from the entry's: B counts one mismatch and reads that bottom-level node anew (one internal
// READ, no upper level, no cache miss); the refreshed entry then matches. Each round reaches the
// check through another read: a search's table, a write's locked table, a scan's first table.
void stale_entry_rounds(bool versions) {
  TwoNodes n(coherence_options(versions));
  auto ha = n.ta->handle(*n.ca);
  auto hb = n.tb->handle(*n.cb);
  for (Key k = 1000; k <= 300000; k += 1000) ASSERT_TRUE(ha.insert(k, value_for(k, 0, 0)));
  std::string out;
  for (Key k = 1000; k <= 300000; k += 1000) ASSERT_TRUE(hb.search(k, out));  // B's cache warm
  ASSERT_GE(n.tb->stats()["height"], 3);
  Key next = 1000;
  const unsigned expect = versions ? 1 : 0;
  for (int round = 0; round < 3; ++round) {
    Key kmin = split_leftmost(ha, next);
    Seen s0(*n.tb);
    if (round == 0) {
      ASSERT_TRUE(hb.search(kmin, out));
      EXPECT_EQ(out, value_for(kmin, 0, 0));
    } else if (round == 1) {
      ASSERT_TRUE(hb.update(kmin, value_for(kmin, 1, 1)));
    } else {
      std::vector<std::pair<Key, std::string>> rows;
      hb.scan(kmin, 3, rows);
      ASSERT_EQ(rows.size(), 3u);
      EXPECT_EQ(rows[0].first, kmin);
      EXPECT_EQ(rows[0].second, value_for(kmin, 0, 0));
    }
    Seen s1(*n.tb);
    EXPECT_EQ(s1.mismatches - s0.mismatches, expect) << "round " << round;
    EXPECT_EQ(s1.reads - s0.reads, expect) << "round " << round;
    EXPECT_EQ(s1.invalidations, s0.invalidations) << "round " << round;
    EXPECT_EQ(s1.misses, s0.misses) << "round " << round;
    ASSERT_TRUE(hb.search(kmin, out));  // the refreshed entry (or the fences) hold now
    EXPECT_EQ(out, value_for(kmin, round == 1 ? 1 : 0, round == 1 ? 1 : 0));
    Seen s2(*n.tb);
    EXPECT_EQ(s2.mismatches, s1.mismatches) << "round " << round;
    EXPECT_EQ(s2.reads, s1.reads) << "round " << round;
  }
  std::printf("%s: B's version mismatches %.0f, internal-node reads %.0f\n",
              versions ? "entry versions" : "fences only", Seen(*n.tb).mismatches,
              Seen(*n.tb).reads);
}

TEST(DmtreeCoherence, StaleCachedEntryFailsTheVersionCheck) {
  stale_entry_rounds(true);
}
TEST(DmtreeCoherence, FencesAloneKeepAStaleEntryThatStillCovers) {
  stale_entry_rounds(false);
}

// Bottom-level entries carry the table pointer and the version: the new root of the first split
// names both leaves with the split's version, read back from memory by another node.
TEST(DmtreeCoherence, EntriesNameTableAndVersion) {
  TwoNodes n(coherence_options(true));
  auto ha = n.ta->handle(*n.ca);
  for (Key k = 1; k <= 8; ++k) ASSERT_TRUE(ha.insert(k * 10, value_for(k * 10, 0, 0)));
  ASSERT_EQ(ha.splits(), 0u);
  ASSERT_TRUE(ha.insert(5, value_for(5, 0, 0)));
  ASSERT_EQ(ha.splits(), 1u);
  auto hb = n.tb->handle(*n.cb);
  std::string out;
  ASSERT_TRUE(hb.search(5, out));
  btree::NodeCache::NodePtr p = n.tb->cache_node_for_test(5);
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->tagged);
  ASSERT_EQ(p->count(), 1u);
  // The first leaf (table 0) went from version 1 to 2; the new one took the next table id.
  EXPECT_EQ(dmtree::tag_table(p->leftmost_tag), 0u);
  EXPECT_EQ(dmtree::tag_version(p->leftmost_tag), 2u);
  EXPECT_EQ(dmtree::tag_version(p->tags[0]), 2u);
  EXPECT_NE(dmtree::tag_table(p->tags[0]), 0u);
}

// --- leaf merges ---------------------------------------------------------------------------------

struct MergeFigures {
  double splits = 0, merges = 0, leaves = 0, aborts = 0, only_children = 0, dead_hits = 0,
         mismatches = 0;
};
MergeFigures merge_figures(std::initializer_list<CoTree*> trees) {
  MergeFigures f;
  for (CoTree* t : trees) {
    auto s = t->stats();
    f.splits += s["leaf_splits"];
    f.merges += s["leaf_merges"];
    f.leaves += s["leaves"];
    f.aborts += s["merge_aborts"];
    f.only_children += s["unmerged_only_children"];
    f.dead_hits += s["dead_leaf_hits"];
    f.mismatches += s["version_mismatches"];
  }
  return f;
}

// Two nodes take turns (so each one's cache and copies go stale behind the other's merges): a
// load, then deletes of most keys mixed with searches, scans, inserts and updates, every answer
// compared with std::map; then everything is deleted and loaded again.
void delete_heavy(dmtree::Options o, uint32_t seed, MergeFigures& f) {
  TwoNodes n(o);
  auto ha = n.ta->handle(*n.ca);
  auto hb = n.tb->handle(*n.cb);
  std::mt19937_64 rng(seed);
  std::map<Key, std::string> model;
  std::string out;
  std::vector<std::pair<Key, std::string>> rows;
  unsigned turn = 0;
  auto h = [&]() -> CoTree::Handle& { return (turn++ % 2) ? hb : ha; };
  const size_t space = 3000;
  auto check_scan = [&](Key from, size_t len) {
    h().scan(from, len, rows);
    auto it = model.lower_bound(from);
    size_t j = 0;
    for (; it != model.end() && j < len; ++it, ++j) {
      ASSERT_LT(j, rows.size()) << "scan from " << from << " too short";
      ASSERT_EQ(rows[j].first, it->first) << "scan from " << from << " row " << j;
      ASSERT_EQ(rows[j].second, it->second);
    }
    ASSERT_EQ(rows.size(), j) << "scan from " << from << " too long";
  };
  auto check_all = [&]() {
    ASSERT_NO_FATAL_FAILURE(check_scan(0, model.size() + 10));
    for (size_t r = 0; r < space; ++r) {
      Key k = key_of_rank(r);
      auto it = model.find(k);
      ASSERT_EQ(h().search(k, out), it != model.end()) << "search " << k;
      if (it != model.end()) {
        ASSERT_EQ(out, it->second);
      }
    }
  };
  for (int cycle = 0; cycle < 2; ++cycle) {
    for (size_t r = 0; r < space; ++r) {
      Key k = key_of_rank(r);
      std::string v = value_for(k, cycle, 0);
      ASSERT_EQ(h().insert(k, v), model.emplace(k, v).second);
    }
    for (uint32_t i = 0; model.size() > space / 5; ++i) {  // removes outweigh inserts 6:1
      Key k = key_of_rank(rng() % space);
      unsigned op = rng() % 100;
      std::string v = value_for(k, 2, i);
      if (op < 60) {
        ASSERT_EQ(h().remove(k), model.erase(k) > 0) << "remove " << k;
      } else if (op < 75) {
        auto it = model.find(k);
        ASSERT_EQ(h().search(k, out), it != model.end()) << "search " << k;
        if (it != model.end()) {
          ASSERT_EQ(out, it->second);
        }
      } else if (op < 85) {
        ASSERT_NO_FATAL_FAILURE(check_scan((rng() % 2) ? k : k + 1, rng() % 40 + 1));
      } else if (op < 95) {
        ASSERT_EQ(h().insert(k, v), model.emplace(k, v).second) << "insert " << k;
      } else {
        auto it = model.find(k);
        if (it != model.end()) it->second = v;
        ASSERT_EQ(h().update(k, v), it != model.end()) << "update " << k;
      }
    }
    ASSERT_NO_FATAL_FAILURE(check_all());
    while (!model.empty()) {  // delete the rest
      Key k = model.begin()->first;
      model.erase(model.begin());
      ASSERT_TRUE(h().remove(k));
      if (model.size() % 50 == 0) {
        ASSERT_NO_FATAL_FAILURE(check_scan(k, 20));
      }
    }
    ASSERT_NO_FATAL_FAILURE(check_all());
  }
  f = merge_figures({n.ta.get(), n.tb.get()});
}

TEST(DmtreeCoherence, DeleteHeavyMergesEmptiedLeaves) {
  MergeFigures f;
  ASSERT_NO_FATAL_FAILURE(delete_heavy(coherence_options(true), 21, f));
  std::printf(
      "entry versions: splits %.0f, merges %.0f, leaves left %.0f, only children left %.0f, "
      "dead-leaf hits %.0f, version mismatches %.0f\n",
      f.splits, f.merges, f.leaves, f.only_children, f.dead_hits, f.mismatches);
  EXPECT_EQ(f.leaves, f.splits + 1 - f.merges);
  // Every emptied leaf merged away but the only children of bottom-level nodes (internal nodes
  // never merge); one client at a time, so no merge ever waits for a split to reach its parent.
  EXPECT_EQ(f.aborts, 0);
  EXPECT_LE(f.leaves, 1 + f.only_children);
  EXPECT_GT(f.merges, 0.85 * f.splits);
  EXPECT_GT(f.dead_hits, 0);   // stale entries and copies led to merged leaves, which said so
  EXPECT_GT(f.mismatches, 0);  // survivors' new versions refreshed stale cached entries
}

TEST(DmtreeCoherence, DeleteHeavyMergesWithFencesOnly) {
  MergeFigures f;
  ASSERT_NO_FATAL_FAILURE(delete_heavy(coherence_options(false), 22, f));
  std::printf("fences only: splits %.0f, merges %.0f, leaves left %.0f, dead-leaf hits %.0f\n",
              f.splits, f.merges, f.leaves, f.dead_hits);
  EXPECT_EQ(f.leaves, f.splits + 1 - f.merges);
  EXPECT_EQ(f.aborts, 0);
  EXPECT_LE(f.leaves, 1 + f.only_children);
  EXPECT_GT(f.merges, 0.85 * f.splits);
  EXPECT_GT(f.dead_hits, 0);
  EXPECT_EQ(f.mismatches, 0);
}

TEST(DmtreeCoherence, WithoutMergesEmptiedLeavesStay) {
  auto o = coherence_options(true);
  o.leaf_merge = false;
  MergeFigures f;
  ASSERT_NO_FATAL_FAILURE(delete_heavy(o, 23, f));
  std::printf("no merges: splits %.0f, leaves left %.0f\n", f.splits, f.leaves);
  EXPECT_EQ(f.merges, 0);
  EXPECT_EQ(f.dead_hits, 0);
  EXPECT_EQ(f.leaves, f.splits + 1);
}

// What a merge costs a delete and what it saves a scan, paper geometry (32 slots, 32 pivots), one
// compute node: 20,000 keys loaded, 99% deleted in random order, then one scan over everything.
struct DeleteCost {
  double delete_rt = 0, delete_bytes = 0, scan_rt = 0, scan_bytes = 0, merges = 0, leaves = 0;
};
void delete_then_scan(bool merge, DeleteCost& d) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  testing::ShmClient c(shm::Endpoint(pool, pool->config().compute_nodes()[0], 710));
  dmtree::Options o;
  o.leaf_merge = merge;
  auto t = CoTree::create(c, o);
  auto h = t->handle(c);
  const size_t n = 20000;
  std::vector<Key> keys;
  for (size_t i = 0; i < n; ++i) {
    keys.push_back(key_of_rank(i));
    ASSERT_TRUE(h.insert(keys.back(), value_for(keys.back(), 0, 0)));
  }
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(5));
  const size_t gone = n * 99 / 100;
  VerbCounters before = c.counters().total;
  for (size_t i = 0; i < gone; ++i) ASSERT_TRUE(h.remove(keys[i]));
  VerbCounters del = c.counters().total - before;
  std::vector<std::pair<Key, std::string>> rows;
  before = c.counters().total;
  h.scan(0, n, rows);
  VerbCounters sc = c.counters().total - before;
  ASSERT_EQ(rows.size(), n - gone);
  d.delete_rt = double(del.round_trips + del.local_accesses) / gone;
  d.delete_bytes = double(del.bytes_read + del.bytes_written) / gone;
  d.scan_rt = double(sc.round_trips + sc.local_accesses);
  d.scan_bytes = double(sc.bytes_read + sc.bytes_written);
  d.merges = t->stats()["leaf_merges"];
  d.leaves = t->stats()["leaves"];
}

TEST(DmtreeCoherence, MergeCostAndWhatItSaves) {
  DeleteCost on, off;
  ASSERT_NO_FATAL_FAILURE(delete_then_scan(true, on));
  ASSERT_NO_FATAL_FAILURE(delete_then_scan(false, off));
  std::printf(
      "delete 99%% of 20,000 keys: merges %.0f (leaves left %.0f vs %.0f); per delete %.3f vs "
      "%.3f round trips + local accesses, %.1f vs %.1f bytes; the scan after: %.0f vs %.0f round "
      "trips + local accesses, %.0f vs %.0f bytes\n",
      on.merges, on.leaves, off.leaves, on.delete_rt, off.delete_rt, on.delete_bytes,
      off.delete_bytes, on.scan_rt, off.scan_rt, on.scan_bytes, off.scan_bytes);
  EXPECT_EQ(off.merges, 0);
  EXPECT_GT(on.merges, 0.5 * off.leaves);
  EXPECT_EQ(on.leaves + on.merges, off.leaves);  // the same splits, as loads are identical
  EXPECT_GT(on.delete_rt, off.delete_rt);        // merges cost the deletes that trigger them
  EXPECT_LT(on.scan_rt, off.scan_rt);            // and spare scans the empty leaves
  EXPECT_LT(on.scan_bytes, off.scan_bytes);
}

}  // namespace
}  // namespace dmrt
