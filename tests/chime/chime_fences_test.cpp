// CHIME with sibling-based validation off (the paper's baseline, Fig. 16): fence keys in every
// metadata replica. The metadata per entry the layout stores with and without them, std::map
// differential runs with splits that route by the fences, and per-op figures on sim (threads x
// fibers: chime_concurrency_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "../common/torn_images.h"
#include "../runtime/test_cluster.h"
#include "../sherman/byte_keys.h"
#include "../sherman/kv_checks.h"
#include "../sim/small_cluster.h"
#include "byte_leaf_images.h"
#include "dmrt/indexes/chime/chime.h"

namespace dmrt {
namespace {

using FencesShmTree = chime::Tree<ShmTransport>;
using FencesSimTree = chime::Tree<SimTransport>;

chime::Options fence_opts(uint32_t key_size, bool sv) {
  chime::Options o;
  o.key_size = key_size;
  o.sibling_validation = sv;
  return o;
}

double metadata_per_entry(uint32_t key_size, bool sv) {
  sim::Cluster cluster{sim::small_test_cluster(1, 1)};
  sim::SimClient c = sim::untimed_setup_client(cluster);
  auto t = FencesSimTree::create(c, fence_opts(key_size, sv));
  EXPECT_EQ(t->sync(), chime::Sync::kVersions);
  auto s = t->stats();
  EXPECT_EQ(s["fence_keys"], sv ? 0.0 : 1.0);
  return s["metadata_bytes_per_entry"];
}

// Torn READs of a leaf whose replicas carry 64-byte fence keys (144-byte replicas over three
// lines, each line's version byte a copy of the replica's): a split's node write (NV + 1, a new
// high fence, half the entries cleared) mixed with the bytes before at line grain; only whole
// images decode untorn with one nv.
struct FenceReplicaImages : test::ByteLeafImages {
  static std::string fkey(char c) { return std::string(40, 'f') + std::string(24, c); }
  FenceReplicaImages() : ByteLeafImages(chime::Geometry{16, 4, 8, true, 64, true}) {
    chime::LeafImage<btree::ByteKeys> img(g, kp);
    for (uint32_t r = 0; r < g.groups(); ++r) {
      img.set_replica(r, 3, GlobalAddress::null());
      img.set_fences(r, fkey('a'), fkey('z'));
    }
    for (uint32_t i = 0; i < g.span(); ++i) {
      uint64_t val = i;
      img.set_entry(i, 3, i % 3 ? chime::Geometry::kOccupied : 0, 0,
                    fkey('b') + std::to_string(i % 10), &val);
    }
    const chime::Segment whole{0, g.node_words()};
    before = bytes(img, whole);
    for (uint32_t i = 0; i < g.span(); i += 2) img.set_entry(i, 4, 0, 0, {}, nullptr);
    for (uint32_t i = 1; i < g.span(); i += 2) img.reseal(i, 4, img.emeta(i).flags, img.hop(i));
    for (uint32_t r = 0; r < g.groups(); ++r) {
      img.set_replica(r, 4, GlobalAddress::null());
      img.set_fences(r, fkey('a'), fkey('m'));
    }
    after = bytes(img, whole);
  }
};

TEST(ChimeFences, WideReplicasRejectTornLines) {
  FenceReplicaImages im;
  EXPECT_EQ(im.g.replica_bytes(), 10u + 2 * (65 + 2));
  size_t torn = test::expect_only_whole_images_accepted(
      im, 64, 5, [&](const std::vector<uint8_t>& m) { return im.accepts(m); });
  EXPECT_GT(torn, 2u);
  // The whole images decode to their fences.
  chime::LeafImage<btree::ByteKeys> img(im.g, im.kp);
  img.mark({0, im.g.node_words()});
  std::copy(im.after.begin(), im.after.end(), img.enc.begin());
  img.decode({0, im.g.node_words()});
  for (uint32_t r = 0; r < im.g.groups(); ++r) {
    EXPECT_EQ(img.low_fence(r), FenceReplicaImages::fkey('a'));
    EXPECT_EQ(img.high_fence(r), FenceReplicaImages::fkey('m'));
  }
}

// Default geometry (64 entries, H = 8, 8-byte values, the paper's line versions). A leaf before
// its lock word: 8 replicas and 64 entries, then a line version byte per 63 bytes after the
// first 64; less the 64 keys and values. Entry: ver 1, hop 2, key slot (8 B integer keys, else
// key_size + a 2-byte length), value 8. Replica: ver 1, valid 1, sibling 8 (10 B), and without
// SV two fence slots (8 B integer keys, else key_size + 1 bytes for the max+1 separator + 2).
TEST(ChimeFences, MetadataPerEntryFromTheLayout) {
  auto expected = [](uint64_t key, uint64_t entry, uint64_t replica) {
    const uint64_t dec = 8 * replica + 64 * entry, enc = dec + 1 + (dec - 1 - 64) / 63;
    return double(enc - 64 * (key + 8)) / 64;
  };
  // 8 B keys: 1,316 B against 1,446 B of leaf before the lock word.
  EXPECT_DOUBLE_EQ(metadata_per_entry(8, true), 292.0 / 64);
  EXPECT_DOUBLE_EQ(metadata_per_entry(8, false), 422.0 / 64);
  EXPECT_DOUBLE_EQ(metadata_per_entry(8, true), expected(8, 19, 10));
  EXPECT_DOUBLE_EQ(metadata_per_entry(8, false), expected(8, 19, 26));
  // 32 B keys: 3,006 B against 3,575 B.
  EXPECT_DOUBLE_EQ(metadata_per_entry(32, true), 446.0 / 64);
  EXPECT_DOUBLE_EQ(metadata_per_entry(32, false), 1015.0 / 64);
  EXPECT_DOUBLE_EQ(metadata_per_entry(32, false), expected(32, 45, 10 + 2 * 35));
  // 256 B keys: 17,570 B against 21,780 B; the saving 7.25x (the paper's formula: 8.6x).
  EXPECT_DOUBLE_EQ(metadata_per_entry(256, true), 674.0 / 64);
  EXPECT_DOUBLE_EQ(metadata_per_entry(256, false), 4884.0 / 64);
  EXPECT_DOUBLE_EQ(metadata_per_entry(256, false), expected(256, 269, 10 + 2 * 259));
}

// The checksum layout (shm) stores fence slots as words: replica 2 words, + 2 key slots.
TEST(ChimeFences, ChecksumLayoutGrowsByTwoKeySlotsPerReplica) {
  auto pool = testing::small_pool(1, 1, uint64_t{64} << 20);
  testing::ShmClient c = testing::make_client(pool, 0);
  for (uint32_t ks : {8u, 32u}) {
    auto on = FencesShmTree::create(c, fence_opts(ks, true));
    auto off = FencesShmTree::create(c, fence_opts(ks, false));
    const uint32_t slot = ks == 8 ? 1 : btree::ByteKeys{ks + 1}.words();
    EXPECT_EQ(off->geometry().rw(), 2 + 2 * slot);
    EXPECT_EQ(off->geometry().remote_bytes() - on->geometry().remote_bytes(), 8u * 8 * 2 * slot);
  }
}

TEST(ChimeFences, DifferentialIntegerKeysShmAndTinyCache) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  testing::ShmClient c = testing::make_client(pool, 0);
  chime::Options o = fence_opts(8, false);
  o.span = 16;
  o.neighborhood = 4;
  o.internal_span = 4;
  o.cache_bytes = 3000;  // stale cached parents: fences must send reads right or re-locate
  o.hotspot_bytes = 1 << 16;
  auto t = FencesShmTree::create(c, o);
  auto h = t->handle(c);
  testing::differential_run(h, 20000, 3000, 7);
  EXPECT_GT(t->stats()["height"], 2);
}

TEST(ChimeFences, DifferentialByteKeysSimLineVersions) {
  for (uint32_t ks : {16u, 256u}) {
    sim::Cluster cluster{sim::small_test_cluster(1, 1)};
    sim::SimClient c = sim::untimed_setup_client(cluster);
    chime::Options o = fence_opts(ks, false);
    o.span = 16;
    o.neighborhood = 4;
    o.internal_span = 4;
    o.hotspot_bytes = 1 << 16;
    auto t = FencesSimTree::create(c, o);
    auto h = t->handle(c);
    testing::bytes_differential(h, 5000, 1000, 41 + ks, ks);
    EXPECT_GT(t->stats()["height"], 2) << ks;
  }
}

// Per operation on sim, default geometry, 20,000 integer keys loaded and the cache warm, the
// speculative read off (so that a search reads its neighborhood and a replica): fences cost no
// round trip, only their bytes in every READ of a neighborhood.
struct FencesPerOp {
  double search_rt, search_rd, update_rt, update_rd;
};
FencesPerOp measure_fences(uint32_t ks, bool sv) {
  sim::Cluster cluster{sim::small_test_cluster(1, 1)};
  sim::SimClient c = sim::untimed_setup_client(cluster);
  chime::Options o = fence_opts(ks, sv);
  o.speculative_read = false;
  auto t = FencesSimTree::create(c, o);
  auto h = t->handle(c);
  auto key = [&](size_t r) {
    if (ks == 8) return key_bytes(testing::key_of_rank(r));
    std::string n = std::to_string(testing::key_of_rank(r));
    return "user" + std::string(ks - 4 - n.size(), '0') + n;
  };
  const size_t n = 20000, q = 2000;
  std::string v;
  for (size_t i = 0; i < n; ++i) EXPECT_TRUE(h.insert(key(i), "value"));
  for (size_t i = 0; i < n; ++i) h.search(key(i), v);
  auto per = [&](auto&& op, double& rt, double& rd) {
    VerbCounters before = c.counters().total;
    for (size_t i = 0; i < q; ++i) op(i);
    VerbCounters d = c.counters().total - before;
    rt = double(d.round_trips) / q;
    rd = double(d.bytes_read) / q;
  };
  FencesPerOp f{};
  per([&](size_t i) { EXPECT_TRUE(h.search(key(i * 7 % n), v)); }, f.search_rt, f.search_rd);
  per([&](size_t i) { EXPECT_TRUE(h.update(key(i * 7 % n), "new")); }, f.update_rt, f.update_rd);
  std::printf("chime key_size %u sv %d: search %.4f RT %.4f B read | update %.4f RT %.4f B read\n",
              ks, sv, f.search_rt, f.search_rd, f.update_rt, f.update_rd);
  return f;
}

TEST(ChimeFences, PerOpFiguresOnSim) {
  // Exact bytes read per search of this deterministic run (2,000 searches each), with SV and
  // with fence keys; an update reads 8 B more (the lock word).
  const std::map<uint32_t, std::pair<double, double>> search_read = {
      {8, {164.508, 180.739}}, {32, {375.741, 446.873}}, {256, {2196.248, 2722.5085}}};
  for (uint32_t ks : {8u, 32u, 256u}) {
    const FencesPerOp on = measure_fences(ks, true), off = measure_fences(ks, false);
    EXPECT_DOUBLE_EQ(on.search_rd, search_read.at(ks).first) << ks;
    EXPECT_DOUBLE_EQ(off.search_rd, search_read.at(ks).second) << ks;
    EXPECT_DOUBLE_EQ(on.update_rd, on.search_rd + 8) << ks;
    EXPECT_DOUBLE_EQ(off.update_rd, off.search_rd + 8) << ks;
    EXPECT_EQ(on.search_rt, 1.0);
    EXPECT_EQ(off.search_rt, 1.0);
    EXPECT_EQ(on.update_rt, 3.0);
    EXPECT_EQ(off.update_rt, 3.0);
    // Each READ of a neighborhood carries one replica, so two fence slots more (and the line
    // version bytes they add).
    const double fences = ks == 8 ? 16 : 2.0 * (ks + 3);
    EXPECT_GE(off.search_rd - on.search_rd, fences) << ks;
    EXPECT_LE(off.search_rd - on.search_rd, fences + fences / 63 + 2) << ks;
    EXPECT_GE(off.update_rd - on.update_rd, fences) << ks;
    EXPECT_LE(off.update_rd - on.update_rd, fences + fences / 63 + 2) << ks;
  }
}

}  // namespace
}  // namespace dmrt
