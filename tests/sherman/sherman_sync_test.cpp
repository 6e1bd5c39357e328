// Sherman leaf synchronization, both settings (options.h `sync`): the paper's two-level versions
// (front/rear node and entry versions) and dmrt's per-object checksums. Bytes per leaf READ and
// entry write on sim (line-atomic), the refusals, a std::map differential run with versions, and
// torn leaf images built line by line and word by word.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "../common/torn_images.h"
#include "../runtime/test_cluster.h"
#include "../sim/small_cluster.h"
#include "dmrt/indexes/sherman/sherman.h"
#include "kv_checks.h"

namespace dmrt {
namespace {

using testing::key_of_rank;
using testing::value_for;
using SimSherman = sherman::Tree<SimTransport>;

sherman::Options sherman_sync(sherman::Sync s) {
  sherman::Options o;
  o.sync = s;
  return o;
}

TEST(ShermanSync, AutoIsVersionsWhereLinesAreAtomicAndChecksumOnShm) {
  sim::Cluster cluster{sim::small_test_cluster(1, 1)};
  sim::SimClient sc = sim::untimed_setup_client(cluster);
  EXPECT_EQ(SimSherman::create(sc, {})->sync(), sherman::Sync::kVersions);
  auto pool = testing::small_pool(1, 1, uint64_t{64} << 20);
  auto c = testing::make_client(pool, 0);
  EXPECT_EQ(sherman::Tree<ShmTransport>::create(c, {})->sync(), sherman::Sync::kChecksum);
  EXPECT_THROW(sherman::Tree<ShmTransport>::create(c, sherman_sync(sherman::Sync::kVersions)),
               ConfigError);
  // Entries over a cache line (value_size > 54): auto keeps checksums, versions are refused.
  sherman::Options big;
  big.value_size = 64;
  EXPECT_EQ(big.resolved_sync(true), sherman::Sync::kChecksum);
  big.sync = sherman::Sync::kVersions;
  EXPECT_THROW(SimSherman::create(sc, big), ConfigError);
}

TEST(ShermanSync, BytesPerLeafAccessInBothSettings) {
  for (sherman::Sync sync : {sherman::Sync::kVersions, sherman::Sync::kChecksum}) {
    const bool versions = sync == sherman::Sync::kVersions;
    sim::Cluster cluster{sim::small_test_cluster(1, 1)};
    sim::SimClient c = sim::untimed_setup_client(cluster);
    auto t = SimSherman::create(c, sherman_sync(sync));
    auto h = t->handle(c);
    const size_t n = 20000;
    for (size_t i = 0; i < n; ++i)
      ASSERT_TRUE(h.insert(key_of_rank(i), value_for(key_of_rank(i), 0, 0)));
    std::string v;
    for (size_t i = 0; i < n; ++i) h.search(key_of_rank(i), v);  // warm the cache
    // A 64-entry leaf: FNV 1 + flags 1 + fences and sibling 24 + 64 x 18 B + RNV 1 = 1,179 B,
    // against a sealed header of 32 B and 64 x 24 B = 1,568 B.
    const uint32_t leaf = versions ? 1179 : 1568;
    EXPECT_EQ(t->geometry().image_bytes(), leaf);
    const size_t q = 1000;
    VerbCounters before = c.counters().total;
    for (size_t i = 0; i < q; ++i) ASSERT_TRUE(h.search(key_of_rank(i * 7 % n), v));
    VerbCounters d = c.counters().total - before;
    EXPECT_EQ(d.round_trips, q);
    EXPECT_EQ(d.bytes_read, q * leaf);
    // Update: [CAS + READ leaf] ; [WRITE entry + WRITE unlock]: 18 + 8 B against 24 + 8 B
    // written, and the CAS's 8 B each way.
    before = c.counters().total;
    for (size_t i = 0; i < q; ++i) {
      Key k = key_of_rank(i * 7 % n);
      ASSERT_TRUE(h.update(k, value_for(k, 0, 1)));
    }
    d = c.counters().total - before;
    EXPECT_EQ(d.round_trips, 2 * q);
    EXPECT_EQ(d.bytes_read, q * (leaf + 8));
    EXPECT_EQ(d.bytes_written, q * ((versions ? 18 : 24) + 8 + 8));
    for (size_t i = 0; i < q; ++i) {
      Key k = key_of_rank(i * 7 % n);
      ASSERT_TRUE(h.search(k, v));
      ASSERT_EQ(v, value_for(k, 0, 1));
    }
  }
}

TEST(ShermanSync, DifferentialWithVersionsOnSim) {
  for (bool sorted : {false, true}) {
    sim::Cluster cluster{sim::small_test_cluster(1, 1)};
    sim::SimClient c = sim::untimed_setup_client(cluster);
    sherman::Options o = sherman_sync(sherman::Sync::kVersions);
    o.leaf_span = 8;
    o.internal_span = 6;
    o.sorted_leaves = sorted;
    auto t = SimSherman::create(c, o);
    auto h = t->handle(c);
    testing::differential_run(h, 20000, 2500, sorted ? 31 : 32);
    EXPECT_GT(t->stats()["height"], 2);
  }
}

// A leaf image with 40 keys, laid out with versions or checksums: `before`, and `after` a node
// write (the header's and every entry's nv + 1, the upper keys gone as a split leaves it) or an
// entry write (one entry's value and EV changed).
struct ShermanImages : test::TornImages {
  sherman::LeafGeometry g;
  ShermanImages(bool versions, bool node_write) : g(64, 8, versions) {
    sherman::LeafImage img(g);
    img.set_header(5, 0, 0, true, GlobalAddress::null());
    for (uint32_t i = 0; i < g.span(); ++i) {
      uint64_t val = i * 3;
      img.set_entry(i, 5, i < 40, i < 40 ? 100 + i : 0, &val);
    }
    before = bytes(img);
    if (node_write) {
      for (uint32_t i = 20; i < g.span(); ++i) img.set_entry(i, 5, false, 0, nullptr);
      img.set_header(5, 0, 120, false, GlobalAddress::from_raw(0x10000));
      img.reseal_all(6);
    } else {
      uint32_t i = 1;  // 52..69 from the node start: across the first line boundary
      uint64_t val = 77;
      img.set_entry(i, 5, true, img.key(i), &val);
      if (versions) img.ev[i] = (img.ev[i] + 1) & 0xf;
    }
    after = bytes(img);
  }
  // The remote leaf (from the node start, lock word 0 included).
  std::vector<uint8_t> bytes(sherman::LeafImage<>& img) const {
    std::vector<uint8_t> b(g.remote_bytes(), 0);
    if (g.versions()) {
      img.encode();
      std::copy(img.enc.begin() + 8, img.enc.end(), b.begin() + 8);
    } else {
      std::memcpy(b.data() + 8, img.w.data(), g.image_bytes());
    }
    return b;
  }
  sherman::LeafImage<> read(const std::vector<uint8_t>& mix) const {
    sherman::LeafImage img(g);
    if (g.versions()) {
      std::copy(mix.begin(), mix.end(), img.enc.begin());
    } else {
      std::memcpy(img.w.data(), mix.data() + 8, g.image_bytes());
    }
    img.finish_read();
    return img;
  }
  bool accepts(const std::vector<uint8_t>& mix) const { return read(mix).consistent(); }
  // A search's verdict on the image (LeafImage::search) and the value it would return.
  std::pair<int, uint64_t> search(const std::vector<uint8_t>& mix, Key k) const {
    sherman::LeafImage img = read(mix);
    const int i = img.search(k);
    return {i, i >= 0 ? img.value(i)[0] : 0};
  }
};

// Every image made of grain-byte pieces of `before` and `after` (cuts at every piece in both
// orders, random subsets) is accepted only if it is one of them. Returns how many were torn.
size_t sherman_torn_rejected(bool versions, bool node_write, size_t grain) {
  ShermanImages im(versions, node_write);
  return test::expect_only_whole_images_accepted(
      im, grain, 9, [&](const std::vector<uint8_t>& m) { return im.accepts(m); });
}

TEST(ShermanSync, VersionsRejectLineTornNodeWrites) {
  EXPECT_GT(sherman_torn_rejected(true, true, 64), 500u);
}
TEST(ShermanSync, VersionsRejectLineTornEntryWrites) {
  EXPECT_GT(sherman_torn_rejected(true, false, 64), 2u);
}
TEST(ShermanSync, ChecksumsRejectLineAndWordTornImages) {
  EXPECT_GT(sherman_torn_rejected(false, true, 64), 500u);
  EXPECT_GT(sherman_torn_rejected(false, true, 8), 500u);
  EXPECT_GT(sherman_torn_rejected(false, false, 8), 2u);
}

// A search checks only the header and its key's entry (LeafImage::search), not every object: on
// every image made of pieces of `before` and `after`, each key's verdict is a whole image's
// (the same entry and value, absent or outside the fences only where one of them says so) or
// torn, and never torn on a whole image. With checksums, torn images whose header and key entry
// are whole answer without a retry; with versions any torn line is a retry, as before.
size_t sherman_search_torn_answered(bool versions, bool node_write, size_t grain) {
  ShermanImages im(versions, node_write);
  std::vector<Key> keys{99, 105, 119, 125, 139, 140};  // 99, 140: absent; 125: moved by the split
  for (Key k = 100; k < 140; k += 7) keys.push_back(k);
  size_t answered = 0;
  auto check = [&](const std::vector<uint8_t>& m) {
    const bool whole = m == im.before || m == im.after;
    for (Key k : keys) {
      const auto v = im.search(m, k), b = im.search(im.before, k), a = im.search(im.after, k);
      EXPECT_NE(b.first, sherman::LeafImage<>::kTorn);
      EXPECT_NE(a.first, sherman::LeafImage<>::kTorn);
      if (v.first == sherman::LeafImage<>::kTorn) {
        EXPECT_FALSE(whole) << k;
        continue;
      }
      EXPECT_TRUE(v == b || v == a) << "key " << k << " entry " << v.first << " value " << v.second;
      answered += !whole;
    }
  };
  const size_t pieces = (im.before.size() + grain - 1) / grain;
  for (size_t cut = 0; cut <= pieces; ++cut) {
    check(im.mix(grain, [&](size_t p) { return p >= cut; }));
    check(im.mix(grain, [&](size_t p) { return p < cut; }));
  }
  std::mt19937_64 rng(11);
  for (int r = 0; r < 300; ++r) {
    uint64_t bits = rng();
    check(im.mix(grain, [&](size_t p) { return (bits >> (p % 64)) & 1; }));
  }
  return answered;
}

TEST(ShermanSync, SearchVerdictsOnTornImagesAreAWholeImagesVerdicts) {
  EXPECT_EQ(sherman_search_torn_answered(true, true, 64), 0u);
  EXPECT_EQ(sherman_search_torn_answered(true, false, 64), 0u);
  EXPECT_GT(sherman_search_torn_answered(false, true, 64), 2000u);
  EXPECT_GT(sherman_search_torn_answered(false, true, 8), 3000u);
  EXPECT_GT(sherman_search_torn_answered(false, false, 8), 1000u);
}

// Sherman's bookend scheme (front and rear node versions only): a line from the middle of the
// newer image between the old front and rear lines passes; the node version in every FEV here
// is what catches it.
TEST(ShermanSync, NodeVersionInEveryLineCatchesWhatBookendsMiss) {
  ShermanImages im(true, true);
  const size_t lines = (im.before.size() + 63) / 64;
  size_t caught = 0;
  for (size_t l = 1; l + 1 < lines; ++l) {
    auto m = im.mix(64, [&](size_t p) { return p == l; });
    if (m == im.before) continue;
    // The bookends (FNV at byte 8, RNV at the end) are both the old image's.
    ASSERT_EQ(m[8], im.before[8]);
    ASSERT_EQ(m.back(), im.before.back());
    caught += !im.accepts(m);
  }
  EXPECT_EQ(caught, lines - 2);
}

}  // namespace
}  // namespace dmrt
