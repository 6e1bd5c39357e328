// Sherman with byte-string keys (key_size != 8): edge-case keys, std::map differential runs with
// splits, scans in byte order, the contract's limits, torn images, and per-op figures on sim.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <random>

#include "../common/key_size_costs.h"
#include "../common/torn_images.h"
#include "../runtime/test_cluster.h"
#include "../sim/small_cluster.h"
#include "byte_keys.h"
#include "dmrt/indexes/sherman/sherman.h"
#include "kv_checks.h"

namespace dmrt {
namespace {

using KTree = sherman::Tree<ShmTransport>;
using KSimTree = sherman::Tree<SimTransport>;
static_assert(BytesKvHandle<KTree::Handle> && BytesRangeHandle<KTree::Handle>);
static_assert(KvHandle<KTree::Handle> && RangeHandle<KTree::Handle>);

struct KeysFixture {
  std::shared_ptr<shm::Pool> pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  testing::ShmClient c = testing::make_client(pool, 0);
};

sherman::Options small_tree(uint32_t key_size) {
  sherman::Options o;
  o.key_size = key_size;
  o.leaf_span = 8;
  o.internal_span = 4;
  return o;
}

TEST(ShermanKeys, EdgeKeysInByteOrder) {
  KeysFixture f;
  auto t = KTree::create(f.c, small_tree(32));
  auto h = t->handle(f.c);
  std::vector<std::string> bulk;
  for (int i = 0; i < 40; ++i)
    bulk.push_back("user" + std::string(16, '0') + std::to_string(1000 + i));
  testing::edge_keys_in_byte_order(h, bulk, [&] {
    EXPECT_GT(t->stats()["height"], 2);  // splits at leaf and internal levels, on long keys
  });
}

TEST(ShermanKeys, LimitsOfTheContract) {
  KeysFixture f;
  auto t = KTree::create(f.c, small_tree(32));
  auto h = t->handle(f.c);
  std::string out;
  EXPECT_THROW(h.insert(std::string(33, 'k'), "v"), LimitError);
  EXPECT_THROW(h.search(std::string(33, 'k'), out), LimitError);
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
  auto it = KTree::create(g.c, small_tree(8));
  auto ih = it->handle(g.c);
  EXPECT_THROW(ih.insert(std::string_view("abc"), "v"), LimitError);
  EXPECT_TRUE(ih.insert(key_bytes(42), "v"));
  ASSERT_TRUE(ih.search(Key{42}, out));
  std::vector<std::pair<std::string, std::string>> rows;
  ih.scan(std::string_view(), 10, rows);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].first, key_bytes(42));

  sherman::Options bad = small_tree(1025);
  EXPECT_THROW(KTree::create(f.c, bad), ConfigError);
  bad = small_tree(32);
  bad.sync = sherman::Sync::kVersions;
  EXPECT_THROW(KTree::create(f.c, bad), ConfigError);
}

TEST(ShermanKeys, DifferentialMixedLengths) {
  for (uint32_t ks : {3u, 16u, 32u, 256u}) {
    KeysFixture f;
    auto t = KTree::create(f.c, small_tree(ks));
    auto h = t->handle(f.c);
    testing::bytes_differential(h, 8000, 1500, 11 + ks, ks);
    EXPECT_GT(t->stats()["height"], 2) << ks;
  }
}

TEST(ShermanKeys, DifferentialSortedLeavesTinyCacheLongPrefix) {
  KeysFixture f;
  sherman::Options o = small_tree(256);
  o.sorted_leaves = true;
  o.local_lock_table = false;
  o.cache_bytes = 20000;
  auto t = KTree::create(f.c, o);
  testing::BytesAsInt<KTree::Handle> h{t->handle(f.c), std::string(240, '\xff'), {}};
  h.prefix[7] = '\0';
  testing::differential_run(h, 12000, 2000, 5, testing::key_of_rank_mixed);
  EXPECT_GT(t->stats()["height"], 2);
  EXPECT_LE(t->cache_bytes(), 20000u);
}

TEST(ShermanKeys, AttachSeesByteKeys) {
  KeysFixture f;
  auto t = KTree::create(f.c, small_tree(32));
  auto h = t->handle(f.c);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(h.insert("key/" + std::to_string(i), "v"));
  auto c2 = testing::make_client(f.pool, 1);
  auto t2 = KTree::attach(c2, small_tree(32));
  auto h2 = t2->handle(c2);
  std::string v;
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(h2.search("key/" + std::to_string(i), v));
}

// Torn READs of byte-key nodes: a leaf with 32 B keys (checksums) before and after a node write
// (nv + 1, upper keys gone, new high fence) or an entry write, and an internal node before and
// after a pivot insert; only whole images pass validation, at 8-byte and 64-byte grains.
std::string pkey(int i) {
  return "user" + std::string(20, '0') + std::to_string(1000 + i);
}
struct ByteLeafImages : test::TornImages {
  btree::ByteKeys kp{32};
  sherman::LeafGeometry g{16, 8, false, kp.words()};
  ByteLeafImages(bool node_write) {
    sherman::LeafImage<btree::ByteKeys> img(g, kp);
    img.set_header(5, "", "", true, GlobalAddress::null());
    for (uint32_t i = 0; i < g.span(); ++i) {
      uint64_t val = i * 3;
      std::string k = pkey(static_cast<int>(i));
      img.set_entry(i, 5, i < 12, i < 12 ? std::string_view(k) : std::string_view(), &val);
    }
    before = bytes(img);
    if (node_write) {
      for (uint32_t i = 6; i < g.span(); ++i) img.set_entry(i, 5, false, "", nullptr);
      std::string hi = pkey(6);
      img.set_header(5, "", hi, false, GlobalAddress::from_raw(0x10000));
      img.reseal_all(6);
    } else {
      uint64_t val = 77;
      img.set_entry(1, 5, true, img.key(1), &val);
    }
    after = bytes(img);
  }
  std::vector<uint8_t> bytes(const sherman::LeafImage<btree::ByteKeys>& img) const {
    std::vector<uint8_t> b(g.remote_bytes(), 0);
    std::memcpy(b.data() + 8, img.w.data(), g.image_bytes());
    return b;
  }
  bool accepts(const std::vector<uint8_t>& mix) const {
    sherman::LeafImage<btree::ByteKeys> img(g, kp);
    std::memcpy(img.w.data(), mix.data() + 8, g.image_bytes());
    return img.consistent();
  }
};

TEST(ShermanKeys, ByteKeyLeavesRejectTornImages) {
  for (bool node_write : {true, false}) {
    ByteLeafImages im(node_write);
    for (size_t grain : {8u, 64u}) {
      size_t torn = test::expect_only_whole_images_accepted(
          im, grain, 3, [&](const std::vector<uint8_t>& m) { return im.accepts(m); });
      EXPECT_GT(torn, 2u);
    }
  }
}

TEST(ShermanKeys, ByteKeyInternalNodesRejectTornImages) {
  using Node = btree::BasicInternalNode<btree::ByteKeys>;
  const btree::ByteKeys kp{256};
  const uint32_t fanout = 8;
  Node n;
  n.level = 1;
  n.lo = pkey(0);
  n.hi_inf = true;
  n.leftmost = GlobalAddress::from_raw(0x1000);
  for (int i = 1; i < 6; ++i)
    n.insert_entry(n.count(), pkey(i * 10), GlobalAddress::from_raw(0x1000 + 0x100 * i), 0);
  std::vector<uint64_t> w0 = n.encode(fanout, kp);
  auto d = Node::decode(GlobalAddress::from_raw(0x40), w0.data(), fanout, w0.size(), kp);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->lo, pkey(0));
  ASSERT_EQ(d->count(), 5u);
  EXPECT_EQ(d->keys[2], pkey(30));
  EXPECT_EQ(d->child_pos(pkey(30)), 3u);
  EXPECT_EQ(d->child_pos(pkey(29)), 2u);
  EXPECT_EQ(w0.size() * 8, Node::image_bytes(fanout, false, kp.words()));
  n.insert_entry(2, pkey(25), GlobalAddress::from_raw(0x9000), 0);
  ++n.nv;
  std::vector<uint64_t> w1 = n.encode(fanout, kp);
  test::TornImages im;
  im.before.assign(reinterpret_cast<uint8_t*>(w0.data()),
                   reinterpret_cast<uint8_t*>(w0.data() + w0.size()));
  im.after.assign(reinterpret_cast<uint8_t*>(w1.data()),
                  reinterpret_cast<uint8_t*>(w1.data() + w1.size()));
  // The checksum covers the used part of the image (count entries), so a mix whose unused tail
  // comes from the other image decodes to a whole node: what must hold is that every accepted
  // image decodes to the node before or the node after, and that torn ones are rejected.
  auto decode = [&](const std::vector<uint8_t>& m) {
    std::vector<uint64_t> w(m.size() / 8);
    std::memcpy(w.data(), m.data(), m.size());
    return Node::decode(GlobalAddress::from_raw(0x40), w.data(), fanout, w.size(), kp);
  };
  auto same = [](const Node& x, const Node& y) {
    return x.nv == y.nv && x.lo == y.lo && x.keys == y.keys && x.children == y.children &&
           x.leftmost == y.leftmost && x.hi_inf == y.hi_inf;
  };
  const Node nb = *decode(im.before), na = *decode(im.after);
  size_t torn = 0;
  auto check = [&](const std::vector<uint8_t>& m) {
    auto d = decode(m);
    if (!d) {
      ++torn;
      return;
    }
    EXPECT_TRUE(same(*d, nb) || same(*d, na));
  };
  const size_t pieces = (im.before.size() + 63) / 64;
  for (size_t cut = 1; cut < pieces; ++cut) {
    check(im.mix(64, [&](size_t p) { return p >= cut; }));
    check(im.mix(64, [&](size_t p) { return p < cut; }));
  }
  std::mt19937_64 rng(4);
  for (int r = 0; r < 500; ++r) {
    uint64_t bits = rng();
    check(im.mix(64, [&](size_t p) { return (bits >> (p % 64)) & 1; }));
  }
  EXPECT_GT(torn, 10u);
}

// Per-op figures on sim (deterministic), default geometry (64-entry leaves and internal nodes,
// 8-byte values): the "## Long keys" table of dmrt/indexes/sherman/README.md
// (testing::key_size_costs).
testing::KeySizeCosts measure(uint32_t ks) {
  sherman::Options o;
  o.key_size = ks;
  return testing::key_size_costs<KSimTree>("sherman", "leaf", o,
                                           [](auto& t) { return t.geometry().image_bytes(); });
}

TEST(ShermanKeys, PerOpFiguresOnSim) {
  // Leaf image: header 2 + 2kw words, 64 entries of 1 + kw + 1 words (kw = (key_size + 9) / 8);
  // key_size 8 keeps the line versions (1,179 B, sherman_sync_test.cpp).
  const testing::KeySizeCosts k8 = measure(8), k32 = measure(32), k256 = measure(256);
  EXPECT_EQ(k8.node_bytes, 1179u);
  EXPECT_EQ(k32.node_bytes, 8u * (12 + 64 * 7));
  EXPECT_EQ(k256.node_bytes, 8u * (68 + 64 * 35));
  for (const testing::KeySizeCosts* f : {&k8, &k32, &k256}) {
    // A search: one READ of the leaf (internal nodes cached); an update: CAS + READ, then the
    // entry WRITE and the unlock in one batch.
    EXPECT_EQ(f->search.rt, 1.0);
    EXPECT_EQ(f->search.rd, f->node_bytes);
    EXPECT_EQ(f->search.wr, 0.0);
    EXPECT_EQ(f->update.rt, 2.0);
    EXPECT_EQ(f->update.rd, f->node_bytes + 8);
  }
  EXPECT_EQ(k8.update.wr, 18 + 8 + 8);
  EXPECT_EQ(k32.update.wr, 8 * 7 + 8 + 8);
  EXPECT_EQ(k256.update.wr, 8 * 35 + 8 + 8);
  // Inserts of 2,000 new keys (21 of them split a leaf: 2.0105 round trips each for every key
  // size, as the leaf span is 64 entries whatever the key) and 50-row scans (2.123 leaves each):
  // exact totals of this deterministic run.
  for (const testing::KeySizeCosts* f : {&k8, &k32, &k256}) {
    EXPECT_DOUBLE_EQ(f->insert.rt, 2.0105);
    EXPECT_DOUBLE_EQ(f->scan.rt, 2.123);
    EXPECT_DOUBLE_EQ(f->scan.rd, 2.123 * f->node_bytes);
  }
  EXPECT_DOUBLE_EQ(k8.insert.rd, 1190.808);
  EXPECT_DOUBLE_EQ(k8.insert.wr, 44.794);
  EXPECT_DOUBLE_EQ(k32.insert.rd, 3699.2);
  EXPECT_DOUBLE_EQ(k32.insert.wr, 104.708);
  EXPECT_DOUBLE_EQ(k256.insert.rd, 18534.944);
  EXPECT_DOUBLE_EQ(k256.insert.wr, 468.596);
}

}  // namespace
}  // namespace dmrt
