// CHIME with byte-string keys (key_size != 8): edge-case keys, std::map differential runs with
// splits on shm (checksums) and sim (the paper's line versions), the contract's limits, torn
// wide-entry images, and per-op figures on sim (threads x fibers: chime_concurrency_test.cpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <random>

#include "../common/key_size_costs.h"
#include "../common/torn_images.h"
#include "../runtime/test_cluster.h"
#include "../sherman/byte_keys.h"
#include "../sherman/kv_checks.h"
#include "../sim/small_cluster.h"
#include "byte_leaf_images.h"
#include "dmrt/indexes/chime/chime.h"

namespace dmrt {
namespace {

using KeysShmTree = chime::Tree<ShmTransport>;
using KeysSimTree = chime::Tree<SimTransport>;
static_assert(BytesKvHandle<KeysShmTree::Handle> && BytesRangeHandle<KeysShmTree::Handle>);
static_assert(KvHandle<KeysShmTree::Handle> && RangeHandle<KeysShmTree::Handle>);

struct KeysFixture {
  std::shared_ptr<shm::Pool> pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  testing::ShmClient c = testing::make_client(pool, 0);
};

chime::Options small_keys(uint32_t key_size) {
  chime::Options o;
  o.key_size = key_size;
  o.span = 16;
  o.neighborhood = 4;
  o.internal_span = 4;
  o.hotspot_bytes = 1 << 16;
  return o;
}

TEST(ChimeKeys, EdgeKeysInByteOrder) {
  KeysFixture f;
  auto t = KeysShmTree::create(f.c, small_keys(32));
  auto h = t->handle(f.c);
  std::vector<std::string> bulk;
  for (int i = 0; i < 60; ++i)
    bulk.push_back("user" + std::string(16, '0') + std::to_string(1000 + i));
  std::map<std::string, std::string> model;
  ASSERT_NO_FATAL_FAILURE(testing::edge_keys_in_byte_order(
      h, bulk, [&] { EXPECT_GT(t->stats()["height"], 2); },  // leaf and internal splits
      &model));
  // The largest key of a leaf stays as a tombstone when removed (its max+1 boundary): removing
  // and re-inserting every key keeps the tree exact.
  for (auto& [k, v] : model) ASSERT_TRUE(h.remove(k));
  std::vector<std::pair<std::string, std::string>> rows;
  h.scan(std::string_view(), 1000, rows);
  EXPECT_TRUE(rows.empty());
  for (auto& [k, v] : model) ASSERT_TRUE(h.insert(k, v));
  h.scan(std::string_view(), 1000, rows);
  EXPECT_EQ(rows.size(), model.size());
  EXPECT_EQ(t->stats()["scan_windows"], 0);  // byte keys: no integer key windows
}

TEST(ChimeKeys, LimitsOfTheContract) {
  KeysFixture f;
  auto t = KeysShmTree::create(f.c, small_keys(32));
  auto h = t->handle(f.c);
  std::string out;
  EXPECT_THROW(h.insert(std::string(33, 'k'), "v"), LimitError);
  EXPECT_THROW(h.search(std::string(33, 'k'), out), LimitError);
  EXPECT_THROW(h.update(std::string(33, 'k'), "v"), LimitError);
  EXPECT_THROW(h.remove(std::string(33, 'k')), LimitError);
  EXPECT_THROW(h.insert(std::string_view(), "v"), LimitError);
  EXPECT_TRUE(h.insert(std::string(32, 'k'), "v"));
  // Integer keys on a byte-key tree are their 8 big-endian bytes.
  EXPECT_TRUE(h.insert(Key{0x0102030405060708}, "i"));
  ASSERT_TRUE(h.search(std::string_view("\x01\x02\x03\x04\x05\x06\x07\x08", 8), out));
  EXPECT_EQ(out[0], 'i');
  std::vector<std::pair<Key, std::string>> irows;
  h.scan(Key{1}, 1, irows);
  ASSERT_EQ(irows.size(), 1u);
  EXPECT_EQ(irows[0].first, Key{0x0102030405060708});

  // An integer tree takes 8-byte keys only through the bytes overloads.
  KeysFixture g;
  auto it = KeysShmTree::create(g.c, small_keys(8));
  auto ih = it->handle(g.c);
  EXPECT_THROW(ih.insert(std::string_view("abc"), "v"), LimitError);
  EXPECT_TRUE(ih.insert(key_bytes(42), "v"));
  ASSERT_TRUE(ih.search(Key{42}, out));
  std::vector<std::pair<std::string, std::string>> rows;
  ih.scan(std::string_view(), 10, rows);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].first, key_bytes(42));

  EXPECT_THROW(KeysShmTree::create(f.c, small_keys(1025)), ConfigError);
  EXPECT_THROW(KeysShmTree::create(f.c, small_keys(0)), ConfigError);
}

TEST(ChimeKeys, DifferentialMixedLengthsShm) {
  for (uint32_t ks : {3u, 16u, 32u, 256u}) {
    KeysFixture f;
    auto t = KeysShmTree::create(f.c, small_keys(ks));
    auto h = t->handle(f.c);
    testing::bytes_differential(h, 8000, 1500, 21 + ks, ks);
    EXPECT_GT(t->stats()["height"], 2) << ks;
    EXPECT_EQ(t->sync(), chime::Sync::kChecksum);
  }
}

// On sim the leaves carry the paper's line versions: entries of 5 + key_size + value_size bytes
// span several 64-byte lines.
TEST(ChimeKeys, DifferentialMixedLengthsSimLineVersions) {
  for (uint32_t ks : {16u, 256u}) {
    sim::Cluster cluster{sim::small_test_cluster(1, 1)};
    sim::SimClient c = sim::untimed_setup_client(cluster);
    auto t = KeysSimTree::create(c, small_keys(ks));
    auto h = t->handle(c);
    EXPECT_EQ(t->sync(), chime::Sync::kVersions);
    testing::bytes_differential(h, 5000, 1000, 31 + ks, ks);
    EXPECT_GT(t->stats()["height"], 2) << ks;
  }
}

TEST(ChimeKeys, DifferentialAllTechniquesOffTinyCache) {
  KeysFixture f;
  chime::Options o = small_keys(64);
  o.hopscotch_leaf = false;
  o.vacancy_piggyback = false;
  o.metadata_replication = false;
  o.speculative_read = false;
  o.parallel_scan = false;
  o.cache_bytes = 3000;
  auto t = KeysShmTree::create(f.c, o);
  testing::BytesAsInt<KeysShmTree::Handle> h{t->handle(f.c), std::string(50, '\xff'), {}};
  h.prefix[9] = '\0';
  testing::differential_run(h, 10000, 1500, 5, testing::key_of_rank_mixed);
  EXPECT_GT(t->stats()["height"], 2);
}

TEST(ChimeKeys, AttachSeesByteKeys) {
  KeysFixture f;
  auto t = KeysShmTree::create(f.c, small_keys(32));
  auto h = t->handle(f.c);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(h.insert("key/" + std::to_string(i), "v"));
  auto c2 = testing::make_client(f.pool, 1);
  auto t2 = KeysShmTree::attach(c2, small_keys(32));
  auto h2 = t2->handle(c2);
  std::string v;
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(h2.search("key/" + std::to_string(i), v));
}

// Torn READs of a byte-key leaf in the paper's layout: entries of 5 + 64 + 8 bytes span two or
// three 64-byte lines, each line's version byte a copy of the entry's. An entry write (one entry's
// key and value, EV + 1) and a node write (NV + 1, every other entry cleared) mixed with the bytes
// before at line grain: only whole images decode untorn with one nv.
struct WideEntryImages : test::ByteLeafImages {
  static std::string wkey(int i) { return "user" + std::string(30, '0') + std::to_string(i); }
  explicit WideEntryImages(bool node_write) : ByteLeafImages(chime::Geometry{16, 4, 8, true, 64}) {
    chime::LeafImage<btree::ByteKeys> img(g, kp);
    for (uint32_t r = 0; r < g.groups(); ++r) img.set_replica(r, 3, GlobalAddress::null());
    for (uint32_t i = 0; i < g.span(); ++i) {
      uint64_t val = i;
      std::string k = wkey(static_cast<int>(i));
      img.set_entry(i, 3, i % 3 ? chime::Geometry::kOccupied : 0, 0, k, &val);
    }
    const chime::Segment whole{0, g.node_words()};
    before = bytes(img, whole);
    if (node_write) {
      for (uint32_t i = 0; i < g.span(); i += 2) img.set_entry(i, 4, 0, 0, {}, nullptr);
      for (uint32_t i = 1; i < g.span(); i += 2) img.reseal(i, 4, img.emeta(i).flags, img.hop(i));
      for (uint32_t r = 0; r < g.groups(); ++r) img.set_replica(r, 4, GlobalAddress::null());
    } else {
      const uint32_t i = 5;
      uint64_t val = 99;
      std::string k = wkey(500);
      img.set_entry(i, 3, chime::Geometry::kOccupied, img.hop(i), k, &val);
      img.ev[i] = (img.ev[i] + 1) & 0xf;
    }
    after = bytes(img, whole);
  }
};

TEST(ChimeKeys, WideEntriesRejectTornLines) {
  for (bool node_write : {true, false}) {
    WideEntryImages im(node_write);
    EXPECT_GT(im.g.entry_bytes(), 64u);
    EXPECT_EQ(im.g.entry_bytes(), 5u + 64 + 8);
    size_t torn = test::expect_only_whole_images_accepted(
        im, 64, 3, [&](const std::vector<uint8_t>& m) { return im.accepts(m); });
    EXPECT_GT(torn, 2u);
  }
}

// Per-op figures on sim (deterministic), default geometry (64-entry leaves, H = 8, 8-byte
// values, line versions): the "## Long keys" table of dmrt/indexes/chime/README.md
// (testing::key_size_costs).
testing::KeySizeCosts measure_keys(uint32_t ks) {
  chime::Options o;
  o.key_size = ks;
  return testing::key_size_costs<KeysSimTree>("chime", "leaf", o,
                                              [](auto& t) { return t.geometry().remote_bytes(); });
}

TEST(ChimeKeys, PerOpFiguresOnSim) {
  // Leaf (line versions): 8 replicas of 10 B, whatever the key (sibling-based validation keeps
  // fence keys out of them), and 64 entries of 3 + key slot + 8 B (slot: 8 B for integer keys,
  // key_size + 2 for byte keys); a line version byte per 63 bytes after the first 64, and the
  // lock word at the next 8-byte boundary.
  auto leaf_bytes = [](uint64_t entry) {
    const uint64_t dec = 8 * 10 + 64 * entry, enc = dec + (dec - 64 + 62) / 63;
    return (enc + 7) / 8 * 8 + 8;
  };
  const testing::KeySizeCosts k8 = measure_keys(8), k32 = measure_keys(32),
                              k256 = measure_keys(256);
  EXPECT_EQ(k8.node_bytes, leaf_bytes(19));
  EXPECT_EQ(k8.node_bytes, 1328u);
  EXPECT_EQ(k32.node_bytes, leaf_bytes(3 + 34 + 8));
  EXPECT_EQ(k256.node_bytes, leaf_bytes(3 + 258 + 8));
  // A warm search is one round trip, the speculative READ of one entry (19, 45, 269 B, and the
  // line version bytes inside it); an update three: lock (masked CAS), READ of the neighborhood,
  // WRITE of the entry with the unlock.
  for (const testing::KeySizeCosts* f : {&k8, &k32, &k256}) {
    EXPECT_EQ(f->search.rt, 1.0);
    EXPECT_EQ(f->search.wr, 0.0);
    EXPECT_EQ(f->update.rt, 3.0);
  }
  // Exact totals of this deterministic run (2,000 operations each).
  EXPECT_DOUBLE_EQ(k8.search.rd, 19.313);
  EXPECT_DOUBLE_EQ(k32.search.rd, 45.7005);
  EXPECT_DOUBLE_EQ(k256.search.rd, 273.2425);
  EXPECT_DOUBLE_EQ(k8.update.rd, 172.508);
  EXPECT_DOUBLE_EQ(k32.update.rd, 383.741);
  EXPECT_DOUBLE_EQ(k256.update.rd, 2204.248);
  EXPECT_DOUBLE_EQ(k8.update.wr, 35.313);
  EXPECT_DOUBLE_EQ(k32.update.wr, 61.7005);
  EXPECT_DOUBLE_EQ(k256.update.wr, 289.2425);
  EXPECT_DOUBLE_EQ(k8.insert.rt, 3.0905);
  EXPECT_DOUBLE_EQ(k32.insert.rt, 3.077);
  EXPECT_DOUBLE_EQ(k256.insert.rt, 3.0505);
  EXPECT_DOUBLE_EQ(k8.insert.rd, 437.769);
  EXPECT_DOUBLE_EQ(k32.insert.rd, 936.8075);
  EXPECT_DOUBLE_EQ(k256.insert.rd, 5266.273);
  EXPECT_DOUBLE_EQ(k8.insert.wr, 133.261);
  EXPECT_DOUBLE_EQ(k32.insert.wr, 274.79);
  EXPECT_DOUBLE_EQ(k256.insert.wr, 1302.7865);
  EXPECT_DOUBLE_EQ(k8.scan.rt, 1.229);
  EXPECT_DOUBLE_EQ(k32.scan.rt, 1.2095);
  EXPECT_DOUBLE_EQ(k256.scan.rt, 1.2035);
  EXPECT_DOUBLE_EQ(k8.scan.rd, 2956.792);
  EXPECT_DOUBLE_EQ(k32.scan.rd, 6663.852);
  EXPECT_DOUBLE_EQ(k256.scan.rd, 38746.344);
}

}  // namespace
}  // namespace dmrt
