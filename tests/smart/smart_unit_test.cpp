// SMART, single client: std::map differential runs (hashed and prefix-heavy keys), the exact
// round trips and bytes of each operation on sim, prefix splits, node type switches, limits.
#include <gtest/gtest.h>

#include <functional>

#include <map>
#include <random>

#include "../runtime/test_cluster.h"
#include "../sherman/kv_checks.h"
#include "../sim/small_cluster.h"
#include "dmrt/indexes/smart/smart.h"

namespace dmrt {
namespace {

using STree = smart::Tree<ShmTransport>;
using SimTree = smart::Tree<SimTransport>;
using sim::SimClient;
using testing::value_for;

struct ShmCluster {
  std::shared_ptr<shm::Pool> pool;
  std::vector<NodeId> cns;
  std::vector<std::unique_ptr<testing::ShmClient>> clients;
  explicit ShmCluster(unsigned compute_nodes) {
    pool = testing::small_pool(1, compute_nodes, uint64_t{256} << 20);
    cns = pool->config().compute_nodes();
    for (unsigned i = 0; i < compute_nodes; ++i)
      clients.push_back(std::make_unique<testing::ShmClient>(shm::Endpoint(pool, cns[i], 700 + i)));
  }
  testing::ShmClient& c(unsigned i) { return *clients[i]; }
};

// Keys that share long runs of bytes and differ in the middle: chains of prefix nodes, prefix
// splits and node growth, which hashed 64-bit keys rarely produce.
Key prefix_heavy_key(size_t r) {
  uint64_t a = r % 3, b = (r / 3) % 7, c = r % 41;
  return (a + 1) << 56 | (b * 37) << 32 | uint64_t{0xab} << 24 | (c * 5) << 8 | (r / 41) % 5;
}

TEST(SmartUnit, DifferentialHashedKeys) {
  ShmCluster cl(1);
  auto t = STree::create(cl.c(0), {});
  auto h = t->handle(cl.c(0));
  testing::differential_run(h, 20000, 3000, 7);
  EXPECT_GT(t->stats()["leaf_splits"], 0);
}

TEST(SmartUnit, DifferentialPrefixHeavyKeysAllOptionsOff) {
  for (int variant = 0; variant < 2; ++variant) {
    ShmCluster cl(1);
    smart::Options o;
    if (variant == 1) {
      o.cache = o.adaptive_nodes = o.read_delegation = o.write_combining = false;
      o.batch_write_cas = true;
    }
    auto t = STree::create(cl.c(0), o);
    auto h = t->handle(cl.c(0));
    testing::differential_run(h, 20000, 4000, 11 + variant, prefix_heavy_key);
    auto s = t->stats();
    EXPECT_GT(s["prefix_splits"], 0) << variant;
    if (variant == 0) {
      EXPECT_GT(s["type_switches"], 0);
    } else {
      EXPECT_EQ(s["type_switches"], 0);
    }
  }
}

TEST(SmartUnit, DifferentialTwoComputeNodesTinyCache) {
  ShmCluster cl(2);
  smart::Options o;
  o.cache_bytes = 3000;
  auto t0 = STree::create(cl.c(0), o);
  auto t1 = STree::attach(cl.c(1), o);
  auto h0 = t0->handle(cl.c(0));
  auto h1 = t1->handle(cl.c(1));
  struct Alt {
    STree::Handle &a, &b;
    unsigned i = 0;
    STree::Handle& next() { return (i++ % 2) ? a : b; }
    bool search(Key k, std::string& out) { return next().search(k, out); }
    bool insert(Key k, std::string_view v) { return next().insert(k, v); }
    bool update(Key k, std::string_view v) { return next().update(k, v); }
    bool remove(Key k) { return next().remove(k); }
    void scan(Key f, size_t n, std::vector<std::pair<Key, std::string>>& rows) {
      next().scan(f, n, rows);
    }
  } alt{h0, h1};
  testing::differential_run(alt, 15000, 3000, 5, prefix_heavy_key);
  EXPECT_GT(t0->stats()["cache_evictions"] + t1->stats()["cache_evictions"], 0);
}

// A chain of prefix nodes, then a prefix split inside it, at exact node counts.
TEST(SmartUnit, PrefixChainAndSplit) {
  ShmCluster cl(1);
  auto t = STree::create(cl.c(0), {});
  auto h = t->handle(cl.c(0));
  const Key a = 0x0102030405060708, b = 0x0102030405060709, c = 0x0102ff0000000000;
  ASSERT_TRUE(h.insert(a, "a"));
  ASSERT_TRUE(h.insert(b, "b"));
  // a and b share bytes 1..6 below the root: a node with 5 prefix bytes, then one with none.
  EXPECT_EQ(t->stats()["inner_nodes"], 3);
  EXPECT_EQ(t->stats()["leaf_splits"], 1);
  ASSERT_TRUE(h.insert(c, "c"));  // differs at byte 2, inside the first node's prefix
  auto s = t->stats();
  EXPECT_EQ(s["prefix_splits"], 1);
  EXPECT_EQ(s["inner_nodes"], 4);
  std::string out;
  for (Key k : {a, b, c}) ASSERT_TRUE(h.search(k, out)) << k;
  ASSERT_TRUE(h.search(a, out));
  EXPECT_EQ(out, std::string("a\0\0\0\0\0\0\0", 8));  // zero-padded to value_size
  EXPECT_FALSE(h.search(0x0102030405060700, out));
  EXPECT_FALSE(h.search(0x0102030000000000, out));
  EXPECT_FALSE(h.insert(c, "x"));
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(0x0102030405060709, 10, rows);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].first, b);
  EXPECT_EQ(rows[1].first, c);
  EXPECT_THROW(h.insert(5, "123456789"), LimitError);
}

// A node grows in place 4 -> 16 -> 48 -> 256 as keys with new bytes arrive under it.
TEST(SmartUnit, NodeTypeSwitches) {
  ShmCluster cl(1);
  auto t = STree::create(cl.c(0), {});
  auto h = t->handle(cl.c(0));
  for (uint64_t i = 0; i < 60; ++i) ASSERT_TRUE(h.insert(uint64_t{7} << 56 | i << 48, "v"));
  auto s = t->stats();
  EXPECT_EQ(s["inner_nodes"], 2);
  EXPECT_EQ(s["type_switches"], 3);
  std::string out;
  for (uint64_t i = 0; i < 60; ++i) ASSERT_TRUE(h.search(uint64_t{7} << 56 | i << 48, out));
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(0, 100, rows);
  ASSERT_EQ(rows.size(), 60u);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_LT(rows[i - 1].first, rows[i].first);
}

// An insert behind a full node's type is invisible until its inserter raises the type. Here the
// inserter stalls between the two (its slot CAS done, the header not yet raised): a second insert
// whose key has the same byte at that node meets the hidden slot. It must make the slot visible
// before it hangs its own key below it, or the acknowledged key is one no search finds.
TEST(SmartUnit, AnInsertThatMeetsAHiddenInsertBehindRaisesTheType) {
  for (bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "cache" : "no cache");
    ShmCluster cl(1);
    smart::Options o;
    o.cache = cache;
    auto t = STree::create(cl.c(0), o);
    auto h = t->handle(cl.c(0));
    auto key = [](uint64_t b1, uint64_t b2) { return uint64_t{1} << 56 | b1 << 48 | b2 << 40; };
    for (uint64_t b1 : {0x10, 0x20, 0x30, 0x40}) ASSERT_TRUE(h.insert(key(b1, 0), "full"));
    ASSERT_EQ(t->stats()["type_switches"], 0);
    // The Node4 below the root's slot for byte 0x01, now full.
    auto& c = cl.c(0);
    const NodeId mem = c.memory_nodes().front();
    auto meta =
        GlobalAddress::from_raw(c.read_value<uint64_t>(layout::root_slot(mem, o.root_slot)));
    smart::Slot root{c.read_value<uint64_t>(meta + 16)};
    GlobalAddress node;
    for (unsigned i = 0; i < smart::kMaxSlots && !node; ++i) {
      smart::Slot s{c.read_value<uint64_t>(root.addr() + 8 + 8ull * i)};
      if (!s.empty() && s.partial() == 0x01) node = s.addr();
    }
    ASSERT_TRUE(node);
    smart::Header hdr{c.read_value<uint64_t>(node)};
    ASSERT_EQ(hdr.type(), 0u);
    ASSERT_EQ(hdr.pos(), 1u);
    // The stalled insert behind: key (0x50, 0)'s leaf in slot 4, the header still a Node4.
    const Key hidden = key(0x50, 0);
    smart::LeafGeometry g{o.key_size, o.value_size};
    std::vector<uint64_t> leaf(g.words(), 0);
    leaf[0] = smart::kPresent;
    smart::KeyBytes kb(hidden, o.key_size);
    std::memcpy(&leaf[2], kb.b, o.key_size);
    std::memcpy(&leaf[2 + g.key_words()], "hidden\0\0", 8);
    leaf[1] = smart::leaf_checksum(leaf.data(), g.words());
    GlobalAddress la = c.alloc(g.bytes(), 8);
    c.write(la, leaf.data(), g.bytes());
    ASSERT_EQ(c.cas(node + 8 + 8 * 4, 0, smart::Slot::make(0x50, true, 0, la).w), 0u);
    std::string out;
    EXPECT_FALSE(h.search(hidden, out));  // not yet inserted, as far as searches know
    // Same byte 0x50 at the node: this insert splits the hidden leaf.
    const Key mine = key(0x50, 0x07);
    ASSERT_TRUE(h.insert(mine, "mine"));
    EXPECT_EQ(smart::Header{c.read_value<uint64_t>(node)}.type(), 1u);  // raised to Node16
    auto h2 = t->handle(c);
    ASSERT_TRUE(h2.search(mine, out));
    EXPECT_EQ(out.substr(0, 4), "mine");
    ASSERT_TRUE(h2.search(hidden, out));
    EXPECT_EQ(out.substr(0, 6), "hidden");
    std::vector<std::pair<Key, std::string>> rows;
    h2.scan(0, 10, rows);
    EXPECT_EQ(rows.size(), 6u);
  }
}

// An insert through a cached node looks for its byte in the cached slots, then copies them. Here
// another client of the compute node inserts the same key between the two (the window the
// between_cached_look_and_copy fault holds open), so the copy holds the key's byte in a slot the
// look saw empty. The first insert must walk on to that slot and find the key, not CAS the next
// empty slot: a second leaf of the key in the node, scanned twice (the zipfian stress under TSan
// did that about once in 30 runs).
TEST(SmartUnit, AnInsertWhoseCachedCopyGainedItsByteWalksOnToIt) {
  if (!kFaultInjection) GTEST_SKIP() << "needs a build with fault injection";
  ShmCluster cl(1);
  std::function<void()> meanwhile;
  smart::Options o;
  o.read_delegation = o.write_combining = false;
  o.faults.between_cached_look_and_copy = [&] {
    if (auto f = std::exchange(meanwhile, nullptr)) f();
  };
  auto t = STree::create(cl.c(0), o);
  auto h = t->handle(cl.c(0)), other = t->handle(cl.c(0));
  auto key = [](uint64_t b1) { return uint64_t{1} << 56 | b1 << 48; };
  for (uint64_t b1 : {0x10, 0x20}) ASSERT_TRUE(h.insert(key(b1), "old"));
  std::string out;
  ASSERT_TRUE(h.search(key(0x10), out));  // the node below byte 0x01 is now cached
  const Key k = key(0x50);
  bool other_inserted = false;
  meanwhile = [&] { other_inserted = other.insert(k, "theirs"); };
  EXPECT_FALSE(h.insert(k, "mine"));  // present: the other client's
  EXPECT_TRUE(other_inserted);
  ASSERT_TRUE(h.search(k, out));
  EXPECT_EQ(out.substr(0, 6), "theirs");
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(0, 10, rows);
  ASSERT_EQ(rows.size(), 3u);  // each key once
  EXPECT_EQ(rows[0].first, key(0x10));
  EXPECT_EQ(rows[1].first, key(0x20));
  EXPECT_EQ(rows[2].first, k);
}

// Verbs, round trips and bytes of one operation of the setup client on sim.
struct Cost {
  uint64_t rts, rd, wr;
  bool operator==(const Cost&) const = default;
};
template <class F>
Cost cost_of(SimClient& c, F f) {
  Counters before = c.counters();
  f();
  const auto& after = c.counters().total;
  return {after.round_trips - before.total.round_trips, after.bytes_read - before.total.bytes_read,
          after.bytes_written - before.total.bytes_written};
}

// Every key's leaf hangs in the root (distinct first bytes), except where a test splits one.
Key root_key(uint64_t i) {
  return i << 56 | 0x1234;
}

// The paper's costs with a warm cache (§4): a search reads the leaf (1 round trip); an update
// reads, locks and writes it back with the lock released (3); an insert writes its leaf and CASes
// an empty slot (2), one more to read a leaf it must split. A leaf is 32 B (8 B status, 8 B
// checksum, 8 B key, 8 B value).
TEST(SmartUnit, RoundTripsPerOperationOnSim) {
  sim::Cluster cluster(sim::small_test_cluster(1, 1));
  SimClient c = sim::untimed_setup_client(cluster);
  auto t = SimTree::create(c, {});
  auto h = t->handle(c);
  for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(h.insert(root_key(i), "v"));
  std::string out;
  ASSERT_TRUE(h.search(root_key(1), out));  // caches the root
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.search(root_key(5), out)); }), (Cost{1, 32, 0}));
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.update(root_key(5), "w")); }), (Cost{3, 40, 40}));
  ASSERT_TRUE(h.search(root_key(5), out));
  EXPECT_EQ(out[0], 'w');
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.insert(root_key(200), "n")); }), (Cost{2, 8, 40}));
  // A new key under an existing leaf: read it, write a Node4 (8 + 4 x 8 B) and the leaf, CAS.
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.insert(root_key(7) ^ uint64_t{1} << 48, "s")); }),
            (Cost{3, 40, 40 + 32 + 8}));
  // Keys equal up to their last byte: the 6 shared bytes need a chain of two nodes (a header
  // holds 5 prefix bytes), written in the same round trip.
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.insert(root_key(8) | 1, "s")); }),
            (Cost{3, 40, 2 * 40 + 32 + 8}));
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.search(root_key(8) | 1, out)); }),
            (Cost{3, 40 + 40 + 32, 0}));
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.search(root_key(8) | 1, out)); }), (Cost{1, 32, 0}));
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.remove(root_key(9))); }), (Cost{3, 40, 40}));
  EXPECT_EQ(cost_of(c, [&] { ASSERT_FALSE(h.search(root_key(9), out)); }), (Cost{1, 32, 0}));
  // The cache learned the split: the moved leaf's search goes to the new node (1 + 1).
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.search(root_key(7), out)); }), (Cost{2, 40 + 32, 0}));
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.search(root_key(7), out)); }), (Cost{1, 32, 0}));
}

// Without the cache a traversal reads the root (8 B header + 256 slots) first; batch_write_cas
// puts a new leaf and its CAS in one round trip.
TEST(SmartUnit, RoundTripsWithoutCacheAndWithBatchedPublish) {
  sim::Cluster cluster(sim::small_test_cluster(1, 1));
  SimClient c = sim::untimed_setup_client(cluster);
  smart::Options o;
  o.cache = false;
  o.batch_write_cas = true;
  auto t = SimTree::create(c, o);
  auto h = t->handle(c);
  for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(h.insert(root_key(i), "v"));
  std::string out;
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.search(root_key(5), out)); }), (Cost{2, 2056 + 32, 0}));
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.insert(root_key(200), "n")); }),
            (Cost{2, 2056 + 8, 40}));
  EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.update(root_key(5), "w")); }), (Cost{4, 2056 + 40, 40}));
}

// SMART-RCU (options.h `rcu`, CHIME's Fig. 13): an update reads the leaf (1), marks it obsolete
// by a CAS on its status (1), writes the new leaf (32 B) and CASes the slot (2 round trips, 1
// with batch_write_cas), against 3 in place. The cache learns the new slot: the next search
// reads the new leaf alone. Deletes stay in place.
TEST(SmartUnit, RcuUpdatesWriteANewLeafAndSwingTheSlot) {
  for (bool batched : {false, true}) {
    sim::Cluster cluster(sim::small_test_cluster(1, 1));
    SimClient c = sim::untimed_setup_client(cluster);
    smart::Options o;
    o.rcu = true;
    o.batch_write_cas = batched;
    auto t = SimTree::create(c, o);
    auto h = t->handle(c);
    for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(h.insert(root_key(i), "v"));
    std::string out;
    ASSERT_TRUE(h.search(root_key(1), out));  // caches the root
    EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.search(root_key(5), out)); }), (Cost{1, 32, 0}));
    EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.update(root_key(5), "w")); }),
              (Cost{batched ? 3u : 4u, 32 + 8 + 8, 8 + 32 + 8}));
    EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.search(root_key(5), out)); }), (Cost{1, 32, 0}));
    EXPECT_EQ(out[0], 'w');
    EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.update(root_key(5), "x")); }),
              (Cost{batched ? 3u : 4u, 32 + 8 + 8, 8 + 32 + 8}));
    EXPECT_EQ(cost_of(c, [&] { ASSERT_TRUE(h.remove(root_key(5))); }), (Cost{3, 40, 40}));
    EXPECT_FALSE(h.search(root_key(5), out));
    EXPECT_FALSE(h.update(root_key(5), "y"));
    EXPECT_TRUE(h.insert(root_key(5), "z"));  // revives the leaf in place
    ASSERT_TRUE(h.search(root_key(5), out));
    EXPECT_EQ(out[0], 'z');
    EXPECT_EQ(t->stats()["rcu_updates"], 2);
  }
}

TEST(SmartUnit, DifferentialRcu) {
  for (int variant = 0; variant < 2; ++variant) {
    ShmCluster cl(1);
    smart::Options o;
    o.rcu = true;
    o.batch_write_cas = variant == 1;
    auto t = STree::create(cl.c(0), o);
    auto h = t->handle(cl.c(0));
    if (variant == 0)
      testing::differential_run(h, 20000, 3000, 17);
    else
      testing::differential_run(h, 20000, 4000, 18, prefix_heavy_key);
    EXPECT_GT(t->stats()["rcu_updates"], 0);
  }
}

TEST(SmartUnit, AttachChecksGeometry) {
  ShmCluster cl(2);
  auto t = STree::create(cl.c(0), {});
  smart::Options o;
  o.value_size = 16;
  EXPECT_THROW(STree::attach(cl.c(1), o), ConfigError);
  o.value_size = 8;
  o.key_size = 16;  // a valid size, but not the tree's
  EXPECT_THROW(STree::attach(cl.c(1), o), ConfigError);
  o.key_size = 4;  // integer keys need 8 bytes
  EXPECT_THROW(STree::create(cl.c(1), o), ConfigError);
  o.key_size = kMaxKeyBytes + 1;
  EXPECT_THROW(STree::create(cl.c(1), o), ConfigError);
}

}  // namespace
}  // namespace dmrt
