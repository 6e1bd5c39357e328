// DMTree with byte-string keys (key_size != 8): edge-case keys in byte order, std::map
// differential runs with splits and merges on one and two compute nodes, the contract's limits,
// and exact per-op figures on sim for 8, 32 and 256 B keys (README "Long keys").
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>

#include "../common/key_size_costs.h"
#include "../runtime/test_cluster.h"
#include "../sherman/byte_keys.h"
#include "../sherman/kv_checks.h"
#include "../sim/small_cluster.h"
#include "dmrt/indexes/dmtree/dmtree.h"

namespace dmrt {
namespace {

using KDTree = dmtree::Tree<ShmTransport>;
using KDSimTree = dmtree::Tree<SimTransport>;
static_assert(BytesKvHandle<KDTree::Handle> && BytesRangeHandle<KDTree::Handle>);
static_assert(KvHandle<KDTree::Handle> && RangeHandle<KDTree::Handle>);

struct KeyNodes {
  std::shared_ptr<shm::Pool> pool;
  std::vector<NodeId> cns;
  std::vector<std::unique_ptr<testing::ShmClient>> clients;
  explicit KeyNodes(unsigned compute_nodes) {
    pool = testing::small_pool(1, compute_nodes, uint64_t{256} << 20);
    cns = pool->config().compute_nodes();
    for (unsigned i = 0; i < compute_nodes; ++i)
      clients.push_back(std::make_unique<testing::ShmClient>(shm::Endpoint(pool, cns[i], 700 + i)));
  }
  testing::ShmClient& c(unsigned i) { return *clients[i]; }
};

dmtree::Options key_tree(uint32_t key_size, bool collab = true) {
  dmtree::Options o;
  o.key_size = key_size;
  o.collaborative = collab;
  o.leaf_span = 8;
  o.internal_span = 6;
  return o;
}

std::string user_key(int i) {
  return "user" + std::string(20, '0') + std::to_string(1000 + i);
}

TEST(DmtreeKeys, EdgeKeysInByteOrder) {
  KeyNodes n(1);
  auto t = KDTree::create(n.c(0), key_tree(32));
  auto h = t->handle(n.c(0));
  std::vector<std::string> bulk;
  for (int i = 0; i < 60; ++i) bulk.push_back(user_key(i));
  testing::edge_keys_in_byte_order(h, bulk, [&] {
    EXPECT_GT(t->stats()["height"], 2);  // leaf and bottom-level splits on 32 B separators
  });
}

TEST(DmtreeKeys, LimitsOfTheContract) {
  KeyNodes n(1);
  auto t = KDTree::create(n.c(0), key_tree(32));
  auto h = t->handle(n.c(0));
  std::string out;
  EXPECT_THROW(h.insert(std::string(33, 'k'), "v"), LimitError);
  EXPECT_THROW(h.search(std::string(33, 'k'), out), LimitError);
  EXPECT_THROW(h.update(std::string(33, 'k'), "v"), LimitError);
  EXPECT_THROW(h.remove(std::string(33, 'k')), LimitError);
  EXPECT_THROW(h.insert(std::string_view(), "v"), LimitError);
  std::vector<std::pair<std::string, std::string>> rows;
  EXPECT_THROW(h.scan(std::string(33, 'k'), 1, rows), LimitError);
  EXPECT_TRUE(h.insert(std::string(32, 'k'), "v"));
  // Integer keys on a byte-key tree are their 8 big-endian bytes.
  EXPECT_TRUE(h.insert(Key{0x0102030405060708}, "i"));
  ASSERT_TRUE(h.search(std::string_view("\x01\x02\x03\x04\x05\x06\x07\x08", 8), out));
  EXPECT_EQ(out[0], 'i');
  std::vector<std::pair<Key, std::string>> irows;
  h.scan(Key{1}, 1, irows);
  ASSERT_EQ(irows.size(), 1u);
  EXPECT_EQ(irows[0].first, Key{0x0102030405060708});
  // The next key is the 32-byte one, which an integer scan cannot return.
  EXPECT_THROW(h.scan(Key{0x0102030405060709}, 1, irows), LimitError);

  // An integer tree takes 8-byte keys only through the bytes overloads.
  KeyNodes m(1);
  auto it = KDTree::create(m.c(0), key_tree(8));
  auto ih = it->handle(m.c(0));
  EXPECT_THROW(ih.insert(std::string_view("abc"), "v"), LimitError);
  EXPECT_TRUE(ih.insert(key_bytes(42), "v"));
  ASSERT_TRUE(ih.search(Key{42}, out));
  ih.scan(std::string_view(), 10, rows);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].first, key_bytes(42));

  EXPECT_THROW(KDTree::create(n.c(0), key_tree(1025)), ConfigError);
  // Every compute node must use the creator's key_size.
  KeyNodes two(2);
  auto t0 = KDTree::create(two.c(0), key_tree(32));
  EXPECT_THROW(KDTree::attach(two.c(1), key_tree(8)), ConfigError);
  EXPECT_THROW(KDTree::attach(two.c(1), key_tree(24)), ConfigError);
}

TEST(DmtreeKeys, DifferentialMixedLengths) {
  for (uint32_t ks : {3u, 16u, 32u, 256u}) {
    SCOPED_TRACE(ks);
    KeyNodes n(1);
    auto t = KDTree::create(n.c(0), key_tree(ks));
    auto h = t->handle(n.c(0));
    testing::bytes_differential(h, 8000, 1500, 11 + ks, ks);
    EXPECT_GT(t->stats()["height"], 2);
  }
}

TEST(DmtreeKeys, DifferentialBaselineNoFilterNoMerge) {
  KeyNodes n(1);
  auto o = key_tree(32, false);
  o.scan_filter = false;
  o.leaf_merge = false;
  auto t = KDTree::create(n.c(0), o);
  auto h = t->handle(n.c(0));
  testing::bytes_differential(h, 6000, 1000, 5, 32);
  EXPECT_EQ(t->stats()["fp_area_bytes"], 0);  // tables on the memory node
}

// Operations alternate between two compute nodes (owners, cached copies, stale cached entries
// of each other's splits and merges), keys with long shared prefixes and mixed lengths.
template <class H>
struct AlternatingBytes {
  H& a;
  H& b;
  unsigned i = 0;
  H& next() { return (i++ % 2) ? a : b; }
  bool search(std::string_view k, std::string& out) { return next().search(k, out); }
  bool insert(std::string_view k, std::string_view v) { return next().insert(k, v); }
  bool update(std::string_view k, std::string_view v) { return next().update(k, v); }
  bool remove(std::string_view k) { return next().remove(k); }
  void scan(std::string_view f, size_t n, std::vector<std::pair<std::string, std::string>>& rows) {
    next().scan(f, n, rows);
  }
};

TEST(DmtreeKeys, DifferentialTwoComputeNodesTinyCache) {
  for (bool versions : {true, false}) {
    SCOPED_TRACE(versions);
    KeyNodes n(2);
    auto o = key_tree(64);
    o.cache_bytes = 4000;
    o.entry_versions = versions;
    auto t0 = KDTree::create(n.c(0), o);
    auto t1 = KDTree::attach(n.c(1), o);
    auto h0 = t0->handle(n.c(0));
    auto h1 = t1->handle(n.c(1));
    AlternatingBytes<KDTree::Handle> alt{h0, h1};
    testing::bytes_differential(alt, 10000, 1500, 23, 64);
    EXPECT_GT(t0->stats()["local_copy_hits"] + t1->stats()["local_copy_hits"], 0);
  }
}

// Deleting most keys empties leaves, which merge (their 32 B fences move into the survivor's
// table); what is left is found, in order, from both compute nodes.
TEST(DmtreeKeys, DeletesMergeByteKeyLeaves) {
  KeyNodes n(2);
  auto t0 = KDTree::create(n.c(0), key_tree(32));
  auto t1 = KDTree::attach(n.c(1), key_tree(32));
  auto h0 = t0->handle(n.c(0));
  auto h1 = t1->handle(n.c(1));
  const int keys = 600;
  for (int i = 0; i < keys; ++i) ASSERT_TRUE((i % 2 ? h0 : h1).insert(user_key(i), "v"));
  for (int i = 0; i < keys; ++i) {
    if (i % 50 == 7) continue;
    ASSERT_TRUE((i % 3 ? h1 : h0).remove(user_key(i))) << i;
  }
  EXPECT_GT(t0->stats()["leaf_merges"] + t1->stats()["leaf_merges"], 20);
  std::string out;
  std::vector<std::pair<std::string, std::string>> rows;
  for (auto* h : {&h0, &h1}) {
    for (int i = 0; i < keys; ++i) EXPECT_EQ(h->search(user_key(i), out), i % 50 == 7) << i;
    h->scan(std::string_view(), 100, rows);
    ASSERT_EQ(rows.size(), size_t{keys / 50});
    for (size_t j = 0; j < rows.size(); ++j) EXPECT_EQ(rows[j].first, user_key(int(j) * 50 + 7));
  }
}

// Integer checks (std::map differential with scans) through keys of 20..28 bytes whose first
// 20 are shared, on two compute nodes.
TEST(DmtreeKeys, IntegerDifferentialThroughLongPrefixes) {
  KeyNodes n(2);
  auto o = key_tree(32);
  auto t0 = KDTree::create(n.c(0), o);
  auto t1 = KDTree::attach(n.c(1), o);
  std::string prefix = "user" + std::string(15, '0') + '\xff';
  testing::BytesAsInt<KDTree::Handle> h{t1->handle(n.c(1)), prefix, {}};
  testing::differential_run(h, 12000, 2000, 5, testing::key_of_rank_mixed);
  EXPECT_GT(t0->stats()["height"] + t1->stats()["height"], 4);
}

// Per-op figures on sim (deterministic), one compute node (its tables are local accesses),
// default geometry (32-entry leaves, 8-byte values): the "## Long keys" table of
// dmrt/indexes/dmtree/README.md (testing::key_size_costs).
testing::KeySizeCosts key_costs(uint32_t ks) {
  dmtree::Options o;
  o.key_size = ks;
  return testing::key_size_costs<KDSimTree>("dmtree", "entry", o,
                                            [](auto& t) { return t.geometry().ew() * 8; });
}

TEST(DmtreeKeys, PerOpFiguresOnSim) {
  const testing::KeySizeCosts k8 = key_costs(8), k32 = key_costs(32), k256 = key_costs(256);
  // An entry: meta, key slot (kw = 1, or (key_size + 9) / 8 words), one value word.
  EXPECT_EQ(k8.node_bytes, 24u);
  EXPECT_EQ(k32.node_bytes, 8u * (1 + 5 + 1));
  EXPECT_EQ(k256.node_bytes, 8u * (1 + 33 + 1));
  for (const testing::KeySizeCosts* f : {&k8, &k32, &k256}) {
    // A search: its own table as a local access, then one READ of the matching entry (key slot
    // + value); each fingerprint false positive adds an entry to that READ. An update: CAS +
    // READ of the table, READ of the entry, WRITE of the entry, the 8-B unlock (local).
    EXPECT_EQ(f->search.rt, 1.0);
    EXPECT_EQ(f->search.local, 1.0);
    EXPECT_EQ(f->update.rt, 3.0);
    EXPECT_EQ(f->update.local, 1.0);
    EXPECT_EQ(f->update.wr, f->node_bytes + 8 + 8);  // entry, CAS, unlock
    // A scan of 50 rows: per leaf, its primary table (local) and the used slot range.
    EXPECT_DOUBLE_EQ(f->scan.rt, 3.199);
    EXPECT_DOUBLE_EQ(f->scan.local, 3.199);
  }
  // Bytes read count the table (local) too: 72 B at 8 B keys, 136 B at 32, 584 B at 256 (fences
  // are key slots), plus the entries read; exact totals of this deterministic run.
  EXPECT_DOUBLE_EQ(k8.search.rd, 98.22);
  EXPECT_DOUBLE_EQ(k32.search.rd, 196.704);
  EXPECT_DOUBLE_EQ(k256.search.rd, 888.5);
  EXPECT_DOUBLE_EQ(k8.update.rd, 98.22);
  EXPECT_DOUBLE_EQ(k32.update.rd, 196.704);
  EXPECT_DOUBLE_EQ(k256.update.rd, 888.5);
  EXPECT_DOUBLE_EQ(k8.insert.rt, 2.206);
  EXPECT_DOUBLE_EQ(k32.insert.rt, 2.212);
  EXPECT_DOUBLE_EQ(k256.insert.rt, 2.1945);
  EXPECT_DOUBLE_EQ(k8.insert.rd, 121.58);
  EXPECT_DOUBLE_EQ(k32.insert.rd, 254.096);
  EXPECT_DOUBLE_EQ(k256.insert.rd, 1175.128);
  EXPECT_DOUBLE_EQ(k8.insert.wr, 174.92);
  EXPECT_DOUBLE_EQ(k32.insert.wr, 365.88);
  EXPECT_DOUBLE_EQ(k256.insert.wr, 1702.6);
  EXPECT_DOUBLE_EQ(k8.scan.rd, 1940.52);
  EXPECT_DOUBLE_EQ(k32.scan.rd, 4425.512);
  EXPECT_DOUBLE_EQ(k256.scan.rd, 21820.456);
}

}  // namespace
}  // namespace dmrt
