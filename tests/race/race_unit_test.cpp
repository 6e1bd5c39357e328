// RACE single-client tests: semantics against std::map, round trips per op, load factor, limits.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <map>
#include <random>

#include "dmrt/indexes/common/xxh64.h"
#include "race_test_util.h"

namespace dmrt::race {
namespace {

using namespace testing;

// --- 1. semantics vs std::map ------------------------------------------------------------------
struct SemanticsCase {
  uint32_t value_size;
  uint32_t groups;
  uint32_t initial_depth;
  bool cache;
};

class RaceSemantics : public ::testing::TestWithParam<SemanticsCase> {};

TEST_P(RaceSemantics, RandomOpsMatchStdMap) {
  const SemanticsCase& sc = GetParam();
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  o.value_size = sc.value_size;
  o.groups_per_subtable = sc.groups;
  o.initial_global_depth = sc.initial_depth;
  o.directory_cache = sc.cache;
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  std::map<uint64_t, std::string> model;
  std::mt19937_64 rng(42 + sc.value_size);
  const uint64_t kKeys = 1500;
  std::string out;
  for (int i = 0; i < 6000; ++i) {
    uint64_t k = rng() % kKeys;
    size_t len = 1 + rng() % sc.value_size;
    std::string v = value_for(k, i, len);
    switch (rng() % 4) {
      case 0: {
        bool expect = !model.count(k);
        ASSERT_EQ(h.insert(k, v), expect) << "insert " << k;
        if (expect) model[k] = v;
        break;
      }
      case 1: {
        bool expect = model.count(k) > 0;
        ASSERT_EQ(h.update(k, v), expect) << "update " << k;
        if (expect) model[k] = v;
        break;
      }
      case 2: {
        bool expect = model.count(k) > 0;
        ASSERT_EQ(h.remove(k), expect) << "remove " << k;
        model.erase(k);
        break;
      }
      default: {
        bool found = h.search(k, out);
        ASSERT_EQ(found, model.count(k) > 0) << "search " << k;
        if (found) {
          ASSERT_EQ(out, model[k]);
        }
      }
    }
  }
  for (uint64_t k = 0; k < kKeys; ++k) {
    bool found = h.search(k, out);
    ASSERT_EQ(found, model.count(k) > 0) << k;
    if (found) {
      EXPECT_EQ(out, model[k]);
    }
  }
  auto n = copies(*idx, c);
  EXPECT_EQ(n.size(), model.size());
  for (auto& [k, cnt] : n) EXPECT_EQ(cnt, 1) << k;
}

INSTANTIATE_TEST_SUITE_P(
    Values, RaceSemantics,
    ::testing::Values(SemanticsCase{8, 256, 2, true}, SemanticsCase{100, 256, 2, true},
                      SemanticsCase{1024, 256, 2, true},
                      // Small subtables from one: many splits and doublings on one client.
                      SemanticsCase{8, 4, 0, true}, SemanticsCase{100, 4, 0, false}));

TEST(RaceLimits, OversizeValueThrowsAndChangesNothing) {
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  o.value_size = 100;
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  ASSERT_TRUE(h.insert(7, "seven"));
  std::string big(101, 'x');
  EXPECT_THROW(h.insert(8, big), LimitError);
  EXPECT_THROW(h.update(7, big), LimitError);
  try {
    h.update(7, big);
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("value_size"), std::string::npos) << e.what();
  }
  std::string out;
  ASSERT_TRUE(h.search(7, out));
  EXPECT_EQ(out, "seven");
  EXPECT_FALSE(h.search(8, out));
  EXPECT_TRUE(h.insert(8, std::string(100, 'y')));
  ASSERT_TRUE(h.search(8, out));
  EXPECT_EQ(out, std::string(100, 'y'));
}

TEST(RaceLimits, AttachSeesTheSameIndex) {
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  ASSERT_TRUE(h.insert(1, "one"));
  auto c2 = client(p, 1);
  auto other = ShmIndex::attach(c2, o);
  auto h2 = other->handle(c2);
  std::string out;
  ASSERT_TRUE(h2.search(1, out));
  EXPECT_EQ(out, "one");
  Options wrong = o;
  wrong.groups_per_subtable = 7;
  EXPECT_THROW(ShmIndex::attach(c2, wrong), ConfigError);
}

// --- 2. round trips per operation
// -----------------------------------------------------------------
uint64_t trips(ShmClient& c) {
  return c.counters().total.round_trips;
}

// `headers_in_view`: Options::reread_headers_in_view. Off (default), search, update and remove
// read the two combined buckets alone (3 READs for a hit with its block) and shm, whose READs are
// not line-atomic, confirms a miss by re-reading the four headers: one round trip more.
void check_round_trips(bool cache, uint64_t extra, bool headers_in_view = false) {
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  o.value_size = 64;
  o.directory_cache = cache;
  o.reread_headers_in_view = headers_in_view;
  const uint64_t miss_trips = headers_in_view ? 1 : 2;
  const uint64_t hit_reads = (headers_in_view ? 7 : 3) + extra;
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  std::string out;
  const uint64_t kN = 200;
  // Warm the allocator chunk so that no op pays the chunk-claiming FAA.
  ASSERT_TRUE(h.insert(1u << 30, "warm"));
  for (uint64_t k = 0; k < kN; ++k) {
    uint64_t before = trips(c);
    ASSERT_TRUE(h.insert(k, value_for(k, 0, 40)));
    EXPECT_EQ(trips(c) - before, 3 + extra) << "insert " << k;
  }
  for (uint64_t k = 0; k < kN; ++k) {
    uint64_t before = trips(c);
    const uint64_t reads = c.counters().total.count(VerbKind::kRead);
    ASSERT_TRUE(h.search(k, out));
    EXPECT_EQ(trips(c) - before, 2 + extra) << "search hit " << k;
    EXPECT_EQ(c.counters().total.count(VerbKind::kRead) - reads, hit_reads) << "search hit " << k;
  }
  uint64_t miss_total = 0;
  for (uint64_t k = kN; k < 2 * kN; ++k) {
    uint64_t before = trips(c);
    ASSERT_FALSE(h.search(k, out));
    uint64_t t = trips(c) - before;
    // A miss ends after the bucket read (and its confirmation) unless a fingerprint collides
    // (then it reads the block).
    EXPECT_GE(t, miss_trips + extra);
    EXPECT_LE(t, miss_trips + 1 + extra);
    miss_total += t;
  }
  EXPECT_LT(miss_total, kN * (miss_trips + extra) + kN / 10);
  for (uint64_t k = 0; k < kN; ++k) {
    uint64_t before = trips(c);
    ASSERT_TRUE(h.update(k, value_for(k, 1, 40)));
    EXPECT_EQ(trips(c) - before, 3 + extra) << "update " << k;
  }
  for (uint64_t k = 0; k < kN; ++k) {
    uint64_t before = trips(c);
    ASSERT_TRUE(h.remove(k));
    EXPECT_EQ(trips(c) - before, 3 + extra) << "delete " << k;
  }
  EXPECT_EQ(idx->stats(c).at("resizes"), 0.0);
}

TEST(RaceRoundTrips, WarmCacheNoResize) {
  check_round_trips(true, 0);
}
// Without the directory cache every operation first reads its directory entry (paper Fig. 14).
TEST(RaceRoundTrips, WithoutDirectoryCacheOneMore) {
  check_round_trips(false, 1);
}
// dmrt's earlier protocol: the four header re-reads in every view, a miss decided in one trip.
TEST(RaceRoundTrips, HeadersReadWithEveryView) {
  check_round_trips(true, 0, true);
}

// --- 3. maximum load factor of one subtable
// -------------------------------------------------------
TEST(RaceLoadFactor, OneSubtableFillsPast85Percent) {
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  o.initial_global_depth = 0;
  o.max_global_depth = 0;  // the first resize trigger throws instead of splitting
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  uint64_t inserted = 0;
  try {
    for (uint64_t k = 0;; ++k) {
      ASSERT_TRUE(h.insert(k, "v"));
      ++inserted;
    }
  } catch (const LimitError&) {
  }
  auto s = idx->stats(c);
  double lf = s.at("load_factor");
  std::printf("RACE default geometry (%u groups, 7-way): max load factor %.4f (%llu items)\n",
              o.groups_per_subtable, lf, static_cast<unsigned long long>(inserted));
  RecordProperty("max_load_factor", std::to_string(lf));
  EXPECT_GE(lf, 0.85);
  EXPECT_EQ(s.at("items"), static_cast<double>(inserted));
  std::string out;
  for (uint64_t k = 0; k < inserted; k += 97) ASSERT_TRUE(h.search(k, out)) << k;
}

TEST(RaceStats, ReportsDepthSubtablesAndResizes) {
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  o.groups_per_subtable = 8;
  o.initial_global_depth = 1;
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  for (uint64_t k = 0; k < 2000; ++k) ASSERT_TRUE(h.insert(k, "x"));
  auto s = idx->stats(c);
  EXPECT_GT(s.at("resizes"), 0.0);
  EXPECT_EQ(s.at("subtables"), 2.0 + s.at("resizes"));
  EXPECT_GE(s.at("global_depth"), 4.0);
  EXPECT_GT(s.at("load_factor"), 0.3);
  EXPECT_EQ(s.at("items"), 2000.0);
}

#ifdef DMRT_FAULT_INJECTION
// --- 6a. fault switch: a delete that skips its CAS
// ---------------------------------------------------
TEST(RaceFaults, DeleteSkipsCasLeavesTheKey) {
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  o.faults.delete_skips_cas = true;
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  ASSERT_TRUE(h.insert(5, "five"));
  EXPECT_TRUE(h.remove(5));  // reports success ...
  std::string out;
  EXPECT_TRUE(h.search(5, out));  // ... but the key is still there: the wrong behaviour shows
}
#endif

// The inlined XXH64 (dmrt/indexes/common/xxh64.h) that RACE's and HStore's hashes and checksums use
// is libxxhash's XXH64 bit for bit: every length across the stripe, 8-, 4- and 1-byte steps, at
// every alignment, several seeds (RACE's and HStore's among them). A difference would move every
// key to other buckets and make stored blocks fail their checksum.
TEST(RaceHash, InlinedXxh64MatchesLibxxhash) {
  std::mt19937_64 rng(7);
  unsigned char buf[300];
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  const uint64_t seeds[] = {0,
                            1,
                            0x52414345ull,
                            0x9e3779b97f4a7c15ull,
                            0xf00dfeedull,
                            0x4853544f52450001ull,
                            ~uint64_t{0},
                            rng()};
  size_t checked = 0;
  for (size_t len = 0; len <= 200; ++len)
    for (uint64_t seed : seeds)
      for (size_t off = 0; off < 8; ++off, ++checked)
        ASSERT_EQ(xxh64(buf + off, len, seed), XXH64(buf + off, len, seed))
            << "length " << len << " seed " << seed << " offset " << off;
  EXPECT_EQ(checked, 201u * 8 * 8);
  const uint64_t k = 0x0123456789abcdefull;  // the integer key path hashes its 8 native bytes
  EXPECT_EQ(xxh64(&k, 8, 0x52414345ull), XXH64(&k, 8, 0x52414345ull));
}

// KeyHash::of hashes an integer key's 8 bytes with the three hashes inlined; they are the same
// three XXH64s as the general path (a byte key of 8 bytes takes the same branch, so compare with
// libxxhash directly), and the bucket numbers follow from them as documented.
TEST(RaceHash, KeyHashOfEightBytesIsThreeXxh64s) {
  std::mt19937_64 rng(11);
  for (uint32_t groups : {1024u, 1000u, 2u, 3u}) {  // power-of-two main buckets take a mask
    Geometry g;
    g.groups = groups;
    for (int i = 0; i < 1000; ++i) {
      const uint64_t key = rng();
      const std::string_view kv(reinterpret_cast<const char*>(&key), 8);
      const KeyHash kh = KeyHash::of(kv, g, 16);
      const uint64_t h = XXH64(&key, 8, KeyHash::kSuffixSeed);
      const uint64_t h2 = XXH64(&key, 8, KeyHash::kSecondSeed);
      ASSERT_EQ(kh.h, h);
      ASSERT_EQ(kh.fp, static_cast<uint8_t>(XXH64(&key, 8, KeyHash::kFpSeed)));
      ASSERT_EQ(kh.main[0], (h >> 16) % g.main_buckets());
      const uint64_t second = h2 % g.main_buckets();
      if (second / 2 != kh.main[0] / 2) {
        ASSERT_EQ(kh.main[1], second);
      } else {
        ASSERT_EQ(kh.main[1], ((kh.main[0] / 2 + 1) % groups) * 2 + (second & 1));
      }
      ASSERT_NE(kh.main[1] / 2, kh.main[0] / 2);
    }
  }
}

// fp_matches (byte compares over the bucket line) against the slot-by-slot definition, on
// buckets whose fingerprints collide often, with the header's top byte equal to the fingerprint
// too (it must not count).
TEST(RaceLayout, FingerprintMatchesAreTheSlotsWithThatByte) {
  std::mt19937_64 rng(5);
  unsigned nonzero = 0;
  for (int i = 0; i < 20000; ++i) {
    uint64_t bucket[8];
    const uint8_t fp = static_cast<uint8_t>(rng() & 3);
    for (auto& w : bucket) w = (rng() & 0x00ffffffffffffffull) | (uint64_t{rng() & 3} << 56);
    if (i & 1) bucket[0] = (bucket[0] & 0x00ffffffffffffffull) | (uint64_t{fp} << 56);
    uint32_t want = 0;
    for (unsigned k = 0; k < kSlotsPerBucket; ++k)
      want |= uint32_t{Slot::fp(bucket[1 + k]) == fp} << k;
    ASSERT_EQ(fp_matches(bucket, fp), want) << "bucket " << i;
    nonzero += want != 0;
  }
  EXPECT_GT(nonzero, 10000u);
}

// The KV block checksum covers the lengths, key and value, not the padding: a change to any byte
// a reader uses makes the block torn, a change to the padding does not.
TEST(RaceLayout, BlockChecksumCoversLengthsKeyAndValue) {
  const uint64_t key = 42;
  const std::string_view kv(reinterpret_cast<const char*>(&key), 8);
  for (const std::string& value :
       {std::string(8, 'v'), std::string(30, 'w'), std::string(100, 'x')}) {
    std::string blk;
    KvBlock::encode(kv, value, blk);
    const uint32_t bytes = static_cast<uint32_t>(blk.size());
    ASSERT_TRUE(KvBlock::intact(blk.data(), bytes));
    EXPECT_EQ(KvBlock::check(blk.data(), bytes, kv), KvBlock::Check::kMatch);
    const size_t used = KvBlock::kHeaderBytes + 8 + value.size();
    for (size_t i = 0; i + KvBlock::kChecksumBytes < bytes; ++i) {
      std::string t = blk;
      t[i] ^= 0x10;
      EXPECT_EQ(KvBlock::intact(t.data(), bytes), i >= used) << "byte " << i << " of " << bytes;
    }
    std::string t = blk;
    t[bytes - 1] ^= 1;  // the checksum itself
    EXPECT_FALSE(KvBlock::intact(t.data(), bytes));
  }
}

}  // namespace
}  // namespace dmrt::race
