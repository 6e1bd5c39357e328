// CHIME leaf synchronization, both settings (options.h `sync`): the paper's cache-line versions
// and dmrt's per-object checksums. Bytes per leaf access on sim (line-atomic), the refusal on
// shm, a std::map differential run with versions, and torn node images built line by line (what
// a line-atomic transport can return) and word by word (what shm can return).
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "../common/torn_images.h"
#include "../runtime/test_cluster.h"
#include "../sherman/kv_checks.h"
#include "../sim/small_cluster.h"
#include "dmrt/indexes/chime/chime.h"
#include "sim_warm.h"

namespace dmrt {
namespace {

using testing::key_of_rank;
using testing::value_for;
using SimTree = chime::Tree<SimTransport>;

chime::Options with_sync(chime::Sync s) {
  chime::Options o;
  o.sync = s;
  o.speculative_read = false;
  return o;
}

using SimWarm = testing::ChimeSimWarm;

TEST(ChimeSync, AutoIsVersionsWhereLinesAreAtomicAndChecksumOnShm) {
  SimWarm s(chime::Options{});
  EXPECT_EQ(s.t->sync(), chime::Sync::kVersions);
  auto pool = testing::small_pool(1, 1, uint64_t{64} << 20);
  auto c = testing::make_client(pool, 0);
  auto t = chime::Tree<ShmTransport>::create(c, chime::Options{});
  EXPECT_EQ(t->sync(), chime::Sync::kChecksum);
  // Asked for explicitly, versions are refused on shm: its READs are not line-atomic.
  chime::Options o;
  o.sync = chime::Sync::kVersions;
  EXPECT_THROW(chime::Tree<ShmTransport>::create(c, o), ConfigError);
  // And with a neighborhood the 2-byte hop field cannot hold next to its flags.
  chime::Options wide;
  wide.neighborhood = 16;
  EXPECT_EQ(wide.resolved_sync(true), chime::Sync::kChecksum);
  EXPECT_THROW({ chime::Geometry g(64, 16, 8, true); }, ConfigError);
}

TEST(ChimeSync, PaperLayoutSizes) {
  // Notes chime.md §2.4 (span 64, H 8, 8 B keys and values): 19 B entries, 10 B replicas,
  // 1,296 B decoded, 1,316 B encoded (20 line versions), the lock word at 1,320.
  chime::Geometry v(64, 8, 8, true), c(64, 8, 8, false);
  EXPECT_EQ(v.entry_bytes(), 19u);
  EXPECT_EQ(v.dec_bytes(), 1296u);
  EXPECT_EQ(v.enc_bytes(), 1316u);
  EXPECT_EQ(v.lock_offset(), 1320u);
  EXPECT_EQ(v.remote_bytes(), 1328u);
  EXPECT_EQ(c.lock_offset(), 1664u);
  EXPECT_EQ(c.remote_bytes(), 1672u);
}

// Bytes per neighborhood READ, per whole-leaf READ and per entry write, in both settings, from
// the client's counters on sim.
TEST(ChimeSync, BytesPerLeafAccessInBothSettings) {
  for (chime::Sync sync : {chime::Sync::kVersions, chime::Sync::kChecksum}) {
    const bool versions = sync == chime::Sync::kVersions;
    SimWarm s(with_sync(sync));
    const chime::Geometry& g = s.t->geometry();
    std::set<uint64_t> plain;  // searches whose neighborhood does not wrap
    uint64_t total = 0;
    const size_t q = 2000;
    std::string v;
    for (size_t i = 0; i < q; ++i) {
      Key k = key_of_rank(i * 7 % s.n);
      auto d = s.measure([&] { ASSERT_TRUE(s.h->search(k, v)); });
      ASSERT_EQ(d.round_trips, 1u);
      total += d.bytes_read;
      if (g.home(k) + g.h() <= g.span()) plain.insert(d.bytes_read);
    }
    // H entries and one replica: 8 x 19 + 10 = 162 B and the 2 or 3 line versions among them,
    // against 8 x 24 + 16 = 208 B.
    if (versions)
      EXPECT_EQ(plain, (std::set<uint64_t>{164, 165}));
    else
      EXPECT_EQ(plain, (std::set<uint64_t>{208}));
    std::printf("chime sync=%s: search %.1f B read/op\n", versions ? "versions" : "checksum",
                double(total) / q);

    // Update: [masked CAS] ; [READ neighborhood] ; [WRITE entry + WRITE lock word].
    auto d = s.measure([&] {
      for (size_t i = 0; i < q; ++i) {
        Key k = key_of_rank(i * 7 % s.n);
        ASSERT_TRUE(s.h->update(k, value_for(k, 0, 1)));
      }
    });
    EXPECT_EQ(d.round_trips, 3 * q);
    double written = double(d.bytes_written) / q;
    // The entry (19 B, 20 when a line version lies in it, against 24 B), the unlock WRITE and
    // the masked CAS's 8 B.
    if (versions) {
      EXPECT_GE(written, 19.0 + 16);
      EXPECT_LE(written, 20.0 + 16);
    } else {
      EXPECT_EQ(written, 24.0 + 16);
    }
    std::printf("chime sync=%s: update %.2f B written/op\n", versions ? "versions" : "checksum",
                written);
  }
  // Whole leaves (the factor analysis' baseline, hopscotch off): 1,316 B against 1,664 B.
  for (chime::Sync sync : {chime::Sync::kVersions, chime::Sync::kChecksum}) {
    chime::Options o = with_sync(sync);
    o.hopscotch_leaf = false;
    SimWarm s(o);
    std::string v;
    auto d = s.measure([&] { ASSERT_TRUE(s.h->search(key_of_rank(5), v)); });
    EXPECT_EQ(d.bytes_read, sync == chime::Sync::kVersions ? 1316u : 1664u);
  }
}

TEST(ChimeSync, SpeculativeEntryReadInBothSettings) {
  for (chime::Sync sync : {chime::Sync::kVersions, chime::Sync::kChecksum}) {
    chime::Options o = with_sync(sync);
    o.speculative_read = true;
    o.hotspot_bytes = 1 << 20;
    SimWarm s(o);
    std::string v;
    std::set<uint64_t> sizes;
    for (int i = 0; i < 200; ++i) {
      auto d = s.measure([&] { ASSERT_TRUE(s.h->search(key_of_rank(42), v)); });
      ASSERT_EQ(d.round_trips, 1u);
      sizes.insert(d.bytes_read);
    }
    // One entry: 19 B (20 when a line version precedes or splits it) against 24 B.
    if (sync == chime::Sync::kVersions)
      EXPECT_TRUE(sizes == std::set<uint64_t>{19} || sizes == std::set<uint64_t>{20});
    else
      EXPECT_EQ(sizes, std::set<uint64_t>{24});
  }
}

TEST(ChimeSync, DifferentialWithVersionsOnSim) {
  sim::Cluster cluster{sim::small_test_cluster(1, 1)};
  sim::SimClient c = sim::untimed_setup_client(cluster);
  chime::Options o;
  o.sync = chime::Sync::kVersions;
  o.span = 16;
  o.neighborhood = 4;
  o.internal_span = 6;
  o.hotspot_bytes = 1 << 16;
  auto t = SimTree::create(c, o);
  ASSERT_EQ(t->sync(), chime::Sync::kVersions);
  auto h = t->handle(c);
  testing::differential_run(h, 20000, 2500, 21);
  EXPECT_GT(t->stats()["height"], 2);
}

// A leaf image with keys at their hopscotch slots, encoded with versions (or laid out with
// checksums): `before`, and `after` a node write (nv + 1, half of the keys gone) or an entry
// write (one entry's value and EV changed).
struct Images : test::TornImages {
  chime::Geometry g;
  Images(bool versions, bool node_write) : g(64, 8, 8, versions) {
    chime::LeafImage<> img(g);
    for (uint32_t r = 0; r < g.groups(); ++r) img.set_replica(r, 3, GlobalAddress::null());
    for (uint32_t i = 0; i < g.span(); ++i) img.set_entry(i, 3, 0, 0, 0, nullptr);
    uint64_t val = 7;
    for (Key k = 1; k < 200; ++k) {  // fill home slots only: hop bit 0
      uint32_t h = g.home(k);
      if (img.occupied(h)) continue;
      img.set_entry(h, 3, chime::Geometry::kOccupied, 1, k, &val);
    }
    const chime::Segment whole{0, g.node_words()};
    before = bytes(img, whole);
    if (node_write) {
      for (uint32_t i = 0; i < g.span(); i += 2) img.set_entry(i, 4, 0, 0, 0, nullptr);
      for (uint32_t i = 1; i < g.span(); i += 2) img.reseal(i, 4, img.emeta(i).flags, img.hop(i));
      for (uint32_t r = 0; r < g.groups(); ++r) img.set_replica(r, 4, GlobalAddress::null());
      after = bytes(img, whole);
    } else {
      // Entry 6 (decoded bytes 124..142) straddles lines 1 and 2: line 2's version byte, before
      // decoded byte 127, is a copy of entry 6's.
      uint32_t i = 6;
      uint64_t nv = 99;
      img.set_entry(i, 3, chime::Geometry::kOccupied, img.hop(i), img.key(i) + 1, &nv);
      if (versions) img.ev[i] = (img.ev[i] + 1) & 0xf;
      after = bytes(img, whole);
    }
  }
  std::vector<uint8_t> bytes(chime::LeafImage<>& img, chime::Segment s) const {
    if (!g.versions()) {
      std::vector<uint8_t> b(8 * g.node_words());
      std::memcpy(b.data(), img.w.data(), b.size());
      return b;
    }
    img.encode(s, false);
    return {img.enc.begin(), img.enc.begin() + static_cast<long>(g.enc_bytes())};
  }
  // Whether a reader accepts `mix` as a whole-leaf image (levels 1 and 2).
  bool accepts(const std::vector<uint8_t>& mix) const {
    chime::LeafImage<> img(g);
    img.forget();
    img.mark({0, g.node_words()});
    if (g.versions()) {
      std::copy(mix.begin(), mix.end(), img.enc.begin());
      img.decode({0, g.node_words()});
    } else {
      std::memcpy(img.w.data(), mix.data(), mix.size());
    }
    return img.consistent(nullptr);
  }
};

// Every image a reader can get from a line-atomic READ racing the write (each 64-byte line from
// one side; a cut at every line in both orders, and random line subsets) is accepted only if it
// is `before` or `after`; the same with word-grain pieces in checksum mode.
size_t expect_torn_images_rejected(bool versions, bool node_write, size_t grain) {
  Images im(versions, node_write);
  return test::expect_only_whole_images_accepted(
      im, grain, 5, [&](const std::vector<uint8_t>& m) { return im.accepts(m); });
}

TEST(ChimeSync, VersionsRejectLineTornNodeWrites) {
  EXPECT_GT(expect_torn_images_rejected(true, true, 64), 500u);
}
TEST(ChimeSync, VersionsRejectLineTornEntryWrites) {
  EXPECT_GT(expect_torn_images_rejected(true, false, 64), 2u);
}
TEST(ChimeSync, ChecksumsRejectLineTornImagesToo) {
  EXPECT_GT(expect_torn_images_rejected(false, true, 64), 500u);
  expect_torn_images_rejected(false, false, 64);  // the entry lies in one line: no tear here
}
TEST(ChimeSync, ChecksumsRejectWordTornImages) {
  EXPECT_GT(expect_torn_images_rejected(false, true, 8), 500u);
  EXPECT_GT(expect_torn_images_rejected(false, false, 8), 2u);
}

// Why versions need line atomicity: torn at 8-byte words (shm), an entry rewritten inside one
// line shows the new key next to the old value under one version byte, and is accepted.
TEST(ChimeSync, VersionsMissWordTornEntriesWhichIsWhyShmRefusesThem) {
  Images im(true, false);
  size_t accepted_torn = 0;
  for (size_t cut = 1; cut * 8 < im.before.size(); ++cut)
    for (bool lower_after : {false, true}) {
      auto m = im.mix(8, [&](size_t p) { return (p < cut) == lower_after; });
      if (m != im.before && m != im.after && im.accepts(m)) ++accepted_torn;
    }
  EXPECT_GT(accepted_torn, 0u);
}

}  // namespace
}  // namespace dmrt
