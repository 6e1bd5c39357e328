// ROLEX single-client tests: PLR bound, key sets, bulk load, round trips per op, differential vs
// std::map.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "../sherman/kv_checks.h"
#include "bench/workload/keysets.h"
#include "dmrt/indexes/rolex/detail/plr.h"
#include "dmrt/policies/shm/service.h"
#include "rolex_test_util.h"

namespace dmrt {
namespace {

using testing::RIndex;

TEST(RolexPlr, EveryTrainingPointWithinEpsilon) {
  for (auto dist : {bench::KeyDist::kUniform, bench::KeyDist::kNormal, bench::KeyDist::kLognormal,
                    bench::KeyDist::kSequentialGaps}) {
    auto keys = bench::make_keyset(dist, 20000, 7);
    std::vector<double> labels(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) labels[i] = double(i);
    for (double eps : {4.0, 16.0, 64.0}) {
      auto segs = rolex::train_plr(keys, labels, eps, 16);
      ASSERT_FALSE(segs.empty());
      size_t s = 0, bad = 0;
      for (size_t i = 0; i < keys.size(); ++i) {
        while (s + 1 < segs.size() && segs[s + 1].first_key <= keys[i]) ++s;
        if (std::fabs(segs[s].predict(keys[i]) - labels[i]) > eps + 1e-3) ++bad;
      }
      EXPECT_EQ(bad, 0u) << bench::key_dist_name(dist) << " eps " << eps;
      if (dist == bench::KeyDist::kUniform && eps == 16.0)
        std::printf("plr: %zu keys uniform eps 16 -> %zu segments\n", keys.size(), segs.size());
    }
  }
  // Regression: a segment whose extreme lines end up parallel (one feasible line) was answered
  // with a line 14 positions off (sequential keys with gaps, 200,000 keys, eps 4).
  {
    auto keys = bench::make_keyset(bench::KeyDist::kSequentialGaps, 200000, 22);
    std::vector<double> labels(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) labels[i] = double(i);
    auto segs = rolex::train_plr(keys, labels, 4, 16);
    size_t s = 0, bad = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      while (s + 1 < segs.size() && segs[s + 1].first_key <= keys[i]) ++s;
      if (std::fabs(segs[s].predict(keys[i]) - labels[i]) > 4 + 1e-3) ++bad;
    }
    EXPECT_EQ(bad, 0u);
  }
  // A straight line is one segment.
  std::vector<Key> k;
  std::vector<double> l;
  for (int i = 0; i < 1000; ++i) k.push_back(1000 + 7 * i), l.push_back(i);
  EXPECT_EQ(rolex::train_plr(k, l, 1, 16).size(), 1u);
}

TEST(RolexKeysets, SortedDistinctAndSized) {
  for (auto dist : {bench::KeyDist::kUniform, bench::KeyDist::kNormal, bench::KeyDist::kLognormal,
                    bench::KeyDist::kSequentialGaps}) {
    auto keys = bench::make_keyset(dist, 5000, 3);
    ASSERT_EQ(keys.size(), 5000u);
    for (size_t i = 1; i < keys.size(); ++i) ASSERT_LT(keys[i - 1], keys[i]);
    EXPECT_GT(keys.front(), 0u);
    EXPECT_LT(keys.back(), rolex::kEmptyKey);
    EXPECT_EQ(bench::parse_key_dist(bench::key_dist_name(dist)), dist);
  }
  EXPECT_THROW(bench::parse_key_dist("zipf"), std::invalid_argument);
}

TEST(RolexIndex, BulkLoadThenSearchEveryKeyInOneRoundTrip) {
  auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
  auto c = testing::make_client(pool, 0);
  auto keys = bench::make_keyset(bench::KeyDist::kLognormal, 20000, 5);
  rolex::Options o;
  auto idx = RIndex::create(c, o, keys);
  auto h = idx->handle(c);
  std::string out;
  // Warm the cache, then every search is one round trip.
  for (Key k : keys) ASSERT_TRUE(h.search(k, out));
  uint64_t total = 0;
  for (Key k : keys) {
    total += testing::rtts(c, [&] { ASSERT_TRUE(h.search(k, out)); });
    Key v;
    std::memcpy(&v, out.data(), 8);
    ASSERT_EQ(v, k);
  }
  EXPECT_EQ(total, keys.size());
  // Absent keys too.
  EXPECT_EQ(testing::rtts(c, [&] { EXPECT_FALSE(h.search(keys[10] + 1, out)); }), 1u);
  auto s = idx->stats(c);
  std::printf(
      "bulk load 20000 lognormal keys: %.0f groups, %.0f models, %.0f leaves, cache %.0f B, misses "
      "%.0f\n",
      s["groups"], s["models"], s["leaves"], s["cache_bytes"], s["model_misses"]);
  EXPECT_EQ(s["model_misses"], 0);
}

// §3.2: the groups (bottom models) are cut at the segments of a PLR over the bulk-loaded keys,
// and the upper models trained over the groups' smallest keys find every key's group inside their
// error window, on each synthetic key set: no fallback search. Figures at 100,000 keys, eps 16:
// about 1,000 keys per group (the paper's Table 1: ~980 per model).
TEST(RolexUpper, TrainedUpperModelsLocateEveryBulkLoadedKey) {
  for (auto dist : {bench::KeyDist::kUniform, bench::KeyDist::kNormal, bench::KeyDist::kLognormal,
                    bench::KeyDist::kSequentialGaps}) {
    auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
    auto c = testing::make_client(pool, 0);
    auto keys = bench::make_keyset(dist, 100000, 21);
    rolex::Options o;
    ASSERT_TRUE(o.plr_groups && o.upper_models);  // the paper's models are the default
    auto idx = RIndex::create(c, o, keys);
    const auto& gk = idx->group_keys();
    const auto& up = idx->upper_models();
    ASSERT_FALSE(up.levels.empty());
    ASSERT_EQ(up.levels.back().size(), 1u);
    uint64_t misses = 0;
    for (Key k : keys)
      for (Key q : {k, k + 1}) {  // a key and an absent key after it
        size_t want = static_cast<size_t>(std::upper_bound(gk.begin(), gk.end(), q) - gk.begin());
        ASSERT_EQ(up.locate(gk, q, o.epsilon, misses), want - 1) << q;
      }
    EXPECT_EQ(misses, 0u) << bench::key_dist_name(dist);
    // Through the index: every key found in one round trip, no fallback in either model level.
    auto h = idx->handle(c);
    std::string out;
    for (size_t i = 0; i < keys.size(); i += 7) ASSERT_TRUE(h.search(keys[i], out));
    auto s = idx->stats(c);
    EXPECT_EQ(s["upper_misses"], 0);
    EXPECT_EQ(s["model_misses"], 0);
    // Groups cut at the PLR's segments: one segment each, but for the keys of the leaf a
    // segment starts in, which go with it (a second segment at most), and cuts of segments
    // longer than max_group_leaves.
    const double per_group = keys.size() / s["groups"];
    std::printf("%s: %.0f groups (%.0f keys each), %.0f models, upper %zu levels / %zu models\n",
                std::string(bench::key_dist_name(dist)).c_str(), s["groups"], per_group,
                s["models"], up.levels.size(), up.segments());
    EXPECT_GE(per_group, 500);
    EXPECT_LE(per_group, 16.0 * o.max_group_leaves);
    EXPECT_LE(s["models"], 2 * s["groups"]);
  }
}

// The upper models are PGM-style levels: with many group keys and a small error there are several
// levels, and each level's window holds the position it must find, for every key of each key set
// and every absent key after one.
TEST(RolexUpper, MultiLevelUpperModelsLocateWithinTheirErrorWindows) {
  for (auto dist : {bench::KeyDist::kUniform, bench::KeyDist::kNormal, bench::KeyDist::kLognormal,
                    bench::KeyDist::kSequentialGaps}) {
    auto gk = bench::make_keyset(dist, 200000, 22);
    gk.front() = 0;  // the first group starts at key 0, as a bulk load's does
    auto up = rolex::UpperModels::train(gk, 4);
    EXPECT_GE(up.levels.size(), 3u) << bench::key_dist_name(dist);
    ASSERT_EQ(up.levels.back().size(), 1u);
    rolex::UpperModels parsed;
    ASSERT_TRUE(rolex::UpperModels::parse(up.serialize().data(), parsed));
    ASSERT_EQ(parsed.segments(), up.segments());
    uint64_t misses = 0;
    for (size_t i = 0; i < gk.size(); ++i)
      for (Key q : {gk[i], gk[i] + 1}) {  // seqgaps: gk[i] + 1 may be gk[i + 1]
        size_t want = i + (i + 1 < gk.size() && gk[i + 1] == q);
        ASSERT_EQ(parsed.locate(gk, q, 4, misses), want) << q;
      }
    EXPECT_EQ(misses, 0u) << bench::key_dist_name(dist);
    std::printf("%s: 200000 group keys, eps 4: %zu levels, %zu upper models\n",
                std::string(bench::key_dist_name(dist)).c_str(), up.levels.size(), up.segments());
  }
}

// Paper step lists with warm models: search 1; insert/update/delete 4 (fetch, CAS, re-read,
// write+unlock); a synonym leaf adds the FAA batch (5). A16 combining saves one.
TEST(RolexIndex, RoundTripsPerOperation) {
  for (bool combine : {false, true}) {
    auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
    auto c = testing::make_client(pool, 0);
    std::vector<Key> keys;
    for (Key k = 1; k <= 16000; ++k) keys.push_back(k * 1000);
    rolex::Options o;
    o.fill = 0.5;  // room in every leaf
    o.combine_lock_and_read = combine;
    auto idx = RIndex::create(c, o, keys);
    auto h = idx->handle(c);
    std::string out;
    for (Key k : keys) h.search(k, out);  // warm
    uint64_t s = 0, ins = 0, upd = 0, del = 0, syn = 0, n = 500;
    for (uint64_t i = 0; i < n; ++i) {
      Key k = keys[i * 31] + 1;
      s += testing::rtts(c, [&] { h.search(keys[i * 31], out); });
      ins += testing::rtts(c, [&] { ASSERT_TRUE(h.insert(k, "v")); });
      upd += testing::rtts(c, [&] { ASSERT_TRUE(h.update(k, "w")); });
      del += testing::rtts(c, [&] { ASSERT_TRUE(h.remove(k)); });
    }
    // Synonym creation: fill one leaf of a full-packed index.
    auto pool2 = testing::small_pool(1, 1, uint64_t{128} << 20);
    auto c2 = testing::make_client(pool2, 0);
    rolex::Options o2;
    o2.combine_lock_and_read = combine;
    auto idx2 = RIndex::create(c2, o2, keys);
    auto h2 = idx2->handle(c2);
    for (Key k : keys) h2.search(k, out);
    for (uint64_t i = 0; i < 50; ++i) {
      // Each key goes to a different (full) leaf: every insert makes a synonym leaf. Refresh the
      // tables first (another op's synonym bumped slot_use) so the measured insert is warm.
      Key k = keys[i * 16 * 20] + 1;
      h2.search(k, out);
      syn += testing::rtts(c2, [&] { ASSERT_TRUE(h2.insert(k, "v")); });
    }
    std::printf(
        "rtts/op (combine=%d): search %.2f insert %.2f update %.2f delete %.2f insert+synonym "
        "%.2f\n",
        combine, double(s) / n, double(ins) / n, double(upd) / n, double(del) / n, syn / 50.0);
    EXPECT_EQ(s, n);
    EXPECT_EQ(ins, n * (combine ? 3 : 4));
    EXPECT_EQ(upd, n * (combine ? 3 : 4));
    EXPECT_EQ(del, n * (combine ? 3 : 4));
    EXPECT_EQ(syn, 50 * (combine ? 4u : 5u));
  }
}

// The paper's search (the default) reads, in its one round trip, every chain of the model's error
// range L_range = [(f(k) - eps)/delta, (f(k) + eps)/delta], widened by one leaf on the left
// (README); the ablation reads only the owner chain. Bulk-loaded full leaves, no synonyms: with
// eps = delta = 16, L_range spans three leaves, so an inner key's search reads four 272 B leaves
// plus the slot_use and model-pointer words, against one leaf for the owner chain alone. Measured:
// 1,087 B against 288 B per search.
// A search posts the leaves of its error range, then slot_use and the model pointer. By default
// adjacent leaves (a bulk load numbers them consecutively) are one READ: three verbs in all; with
// coalesce_leaf_reads off, one READ per leaf. The bytes and the round trip are the same.
TEST(RolexIndex, SearchCoalescesAdjacentLeafReads) {
  std::vector<Key> keys;
  for (Key k = 1; k <= 16000; ++k) keys.push_back(k * 1000);
  uint64_t bytes_of[2] = {0, 0}, reads_of[2] = {0, 0}, searches = 0;
  for (bool coalesce : {true, false}) {
    auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
    auto c = testing::make_client(pool, 0);
    rolex::Options o;
    ASSERT_TRUE(o.coalesce_leaf_reads);
    o.coalesce_leaf_reads = coalesce;
    auto idx = RIndex::create(c, o, keys);
    auto h = idx->handle(c);
    std::string out;
    for (Key k : keys) h.search(k, out);  // warm the model cache
    searches = 0;
    for (size_t i = 100; i < keys.size() - 100; i += 7) {
      const VerbCounters before = c.counters().total;
      ASSERT_TRUE(h.search(keys[i], out));
      const VerbCounters& after = c.counters().total;
      const uint64_t reads = after.count(VerbKind::kRead) - before.count(VerbKind::kRead);
      const uint64_t b = after.bytes_read - before.bytes_read;
      if (coalesce)
        EXPECT_EQ(reads, 3u) << keys[i];  // one run of leaves, slot_use, model ptr
      else
        EXPECT_EQ(reads, 2 + (b - 16) / (16 + 16 * 16)) << keys[i];  // a READ per leaf
      ++searches;
      bytes_of[coalesce] += b;
      reads_of[coalesce] += reads;
    }
  }
  EXPECT_EQ(bytes_of[0], bytes_of[1]);
  EXPECT_GE(reads_of[0], reads_of[1] + searches * 3 / 2);  // about 4 leaves per error range
}

TEST(RolexIndex, DefaultSearchReadsTheErrorRange) {
  std::vector<Key> keys;
  for (Key k = 1; k <= 16000; ++k) keys.push_back(k * 1000);
  const uint64_t leaf_bytes = 16 + 16 * (8 + 8);  // header + 16 pairs of 8 B key and value
  for (bool whole : {true, false}) {
    auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
    auto c = testing::make_client(pool, 0);
    rolex::Options o;
    ASSERT_TRUE(o.read_whole_range);  // the paper's search is the default
    o.read_whole_range = whole;
    auto idx = RIndex::create(c, o, keys);
    auto h = idx->handle(c);
    std::string out;
    for (Key k : keys) h.search(k, out);  // warm the model cache
    uint64_t searches = 0, rtts = 0, at_four = 0, bytes = 0;
    for (size_t i = 100; i < keys.size() - 100; i += 7) {  // away from the segment ends
      const VerbCounters before = c.counters().total;
      ASSERT_TRUE(h.search(keys[i], out));
      const VerbCounters& after = c.counters().total;
      const uint64_t b = after.bytes_read - before.bytes_read;
      ++searches;
      rtts += after.round_trips - before.round_trips;
      bytes += b;
      if (whole) {
        // L_range clamps at the ends of the key's model segment, so a few keys read fewer.
        EXPECT_GE(b, 2 * leaf_bytes + 16) << keys[i];
        EXPECT_LE(b, 4 * leaf_bytes + 16) << keys[i];
        at_four += b == 4 * leaf_bytes + 16;
      } else {
        EXPECT_EQ(b, leaf_bytes + 16) << keys[i];  // the owner chain's one leaf
      }
    }
    std::printf("search (read_whole_range=%d): %.2f round trips, %.1f B\n", whole,
                double(rtts) / searches, double(bytes) / searches);
    EXPECT_EQ(rtts, searches);
    if (whole) {
      EXPECT_GE(at_four, searches * 9 / 10);
      EXPECT_GE(bytes, searches * (3 * leaf_bytes + 16));  // 3.5x the owner chain's bytes
    }
  }
}

// §3.4 write path: under the lock the paper's writer reads its chain's leaves; the ablation also
// reads the whole SLT (2 KiB) with them. Same round trips; the SLT's bytes on every write.
TEST(RolexIndex, WritePathReadsTheChainUnderTheLock) {
  std::vector<Key> keys;
  for (Key k = 1; k <= 16000; ++k) keys.push_back(k * 1000);
  const uint64_t leaf_bytes = 16 + 16 * (8 + 8);
  uint64_t ins_bytes[2] = {}, upd_bytes[2] = {}, search_bytes[2] = {};
  const uint64_t n = 500;
  for (bool slt : {false, true}) {
    auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
    auto c = testing::make_client(pool, 0);
    rolex::Options o;
    ASSERT_FALSE(o.read_slt_under_lock);  // the paper's write path is the default
    o.read_slt_under_lock = slt;
    o.fill = 0.5;  // room in every leaf: no synonym leaves
    auto idx = RIndex::create(c, o, keys);
    auto h = idx->handle(c);
    std::string out;
    for (Key k : keys) h.search(k, out);  // warm
    uint64_t rtt = 0;
    auto bytes = [&](auto&& f) {
      const uint64_t b = c.counters().total.bytes_read;
      rtt += testing::rtts(c, f);
      return c.counters().total.bytes_read - b;
    };
    for (uint64_t i = 0; i < n; ++i) {
      Key k = keys[i * 31] + 1;
      search_bytes[slt] += bytes([&] { ASSERT_FALSE(h.search(k, out)); });
      ins_bytes[slt] += bytes([&] { ASSERT_TRUE(h.insert(k, "v")); });
      upd_bytes[slt] += bytes([&] { ASSERT_TRUE(h.update(k, "w")); });
    }
    EXPECT_EQ(rtt, n * (1 + 4 + 4));
    EXPECT_EQ(idx->stats()["locked_table_reads"], 0);
    std::printf("read_slt_under_lock=%d: insert %.1f B, update %.1f B read (search %.1f B)\n", slt,
                double(ins_bytes[slt]) / n, double(upd_bytes[slt]) / n,
                double(search_bytes[slt]) / n);
  }
  // The fetch reads what the search reads; the lock's CAS returns 8 B; then one leaf (and the
  // SLT with the ablation).
  EXPECT_EQ(ins_bytes[0], search_bytes[0] + n * (8 + leaf_bytes));
  EXPECT_EQ(ins_bytes[1], ins_bytes[0] + n * 2048);
  EXPECT_EQ(upd_bytes[1], upd_bytes[0] + n * 2048);
}

// Under the lock the chain's leaves correct a stale cache: a leaf's `next` names its successor, and
// a successor the cached SLT already holds costs nothing more; one it does not costs one round
// trip for the SLT and one for the new leaves. Node A writes without a fetch (so it locks with
// whatever it cached) after node B grew, then shortened, the chain.
TEST(RolexIndex, LockedWriterFollowsTheLeavesOfAStaleChain) {
  auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
  auto c = testing::make_client(pool, 0);
  auto c2 = testing::make_client(pool, 1);
  std::vector<Key> keys;
  for (Key k = 1; k <= 4000; ++k) keys.push_back(k * 1000);
  rolex::Options o;
  o.fetch_before_lock = false;
  auto a = RIndex::create(c, o, keys);
  auto b = RIndex::attach(c2, rolex::Options{});
  auto ha = a->handle(c);
  auto hb = b->handle(c2);
  std::string out;
  for (Key k : keys) ha.search(k, out);  // A caches every chain: one leaf each
  // B: 2,000,000 ends a full leaf; 40 keys after it make three synonym leaves (16, 16, 8 keys).
  for (Key k = 2'000'001; k <= 2'000'040; ++k) ASSERT_TRUE(hb.insert(k, "b"));
  // A's cached chain is one leaf; the LT entry's CAS fails once (its next moved), the leaves
  // name slots A has not cached: the SLT (+1), the new leaves (+1), then the write.
  uint64_t rtt = testing::rtts(c, [&] { ASSERT_TRUE(ha.insert(2'000'041, "a")); });
  EXPECT_EQ(a->stats()["locked_table_reads"], 1);
  EXPECT_EQ(rtt, 6u);  // CAS (fails), CAS, leaves, SLT, new leaves, write + unlock
  ASSERT_TRUE(hb.search(2'000'041, out));
  EXPECT_EQ(out.substr(0, 1), "a");
  // A caches the three synonyms; B empties the middle one, which it unlinks.
  for (Key k = 2'000'001; k <= 2'000'041; ++k) ASSERT_TRUE(ha.search(k, out));
  for (Key k = 2'000'017; k <= 2'000'032; ++k) ASSERT_TRUE(hb.remove(k));
  ASSERT_EQ(b->stats()["unlinked_leaves"], 1);
  // A's cached SLT still links the emptied leaf; the leaf before it names the one after it,
  // which A holds: no more reads (CAS, leaves, write + unlock).
  rtt = testing::rtts(c, [&] { ASSERT_TRUE(ha.update(2'000'035, "A")); });
  EXPECT_EQ(rtt, 3u);
  EXPECT_EQ(a->stats()["locked_table_reads"], 1);
  ASSERT_TRUE(hb.search(2'000'035, out));
  EXPECT_EQ(out.substr(0, 1), "A");
  for (Key k = 2'000'017; k <= 2'000'032; ++k) EXPECT_FALSE(ha.search(k, out));
  for (Key k : keys) ASSERT_TRUE(ha.search(k, out));
}

// §3.4 delete: a delete that empties a synonym leaf unlinks it ("linking L5 to L7") in the same
// batch as the unlock. A second compute node whose cached tables still hold the leaf finds its
// predecessor's new link, resyncs, and answers right.
TEST(RolexIndex, DeletesUnlinkEmptiedSynonymLeaves) {
  auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
  auto c = testing::make_client(pool, 0);
  auto c2 = testing::make_client(pool, 1);
  std::vector<Key> keys;
  for (Key k = 1; k <= 4000; ++k) keys.push_back(k * 1000);
  rolex::Options o;
  ASSERT_TRUE(o.unlink_empty_synonyms);  // the paper's delete is the default
  auto idx = RIndex::create(c, o, keys);
  auto other = RIndex::attach(c2, o);
  auto h = idx->handle(c);
  auto h2 = other->handle(c2);
  std::string out;
  // Full leaves: 40 keys between two bulk keys make synonym leaves in one chain.
  std::vector<Key> extra;
  for (Key k = 2'000'001; k <= 2'000'040; ++k) {
    ASSERT_TRUE(h.insert(k, "x"));
    extra.push_back(k);
  }
  for (Key k : extra) ASSERT_TRUE(h2.search(k, out));  // node 2 caches the long chain
  const double refreshes = other->stats()["table_refreshes"];
  uint64_t rtt = 0;
  const double own = idx->stats()["table_refreshes"];
  for (Key k : extra) rtt += testing::rtts(c, [&] { ASSERT_TRUE(h.remove(k)); });
  // Unlinking rides in the unlock's batch: 4 round trips per delete, plus, as after a split, a
  // table refresh (re-read, redo: 2) when this node's next delete meets its own stale chain.
  const double own_refreshes = idx->stats()["table_refreshes"] - own;
  EXPECT_EQ(rtt, 4 * extra.size() + 2 * static_cast<uint64_t>(own_refreshes));
  EXPECT_LE(own_refreshes, idx->stats()["unlinked_leaves"]);
  EXPECT_GT(idx->stats()["unlinked_leaves"], 0);
  for (Key k : extra) EXPECT_FALSE(h2.search(k, out)) << k;
  for (Key k : keys) ASSERT_TRUE(h2.search(k, out)) << k;
  EXPECT_GT(other->stats()["table_refreshes"], refreshes);  // the stale chain was detected
  std::printf("unlinked %.0f synonym leaves; the stale node resynced %.0f times\n",
              idx->stats()["unlinked_leaves"], other->stats()["table_refreshes"] - refreshes);
  // The chain takes inserts again after the unlinks.
  for (Key k : extra) ASSERT_TRUE(h2.insert(k, "y"));
  for (Key k : extra) ASSERT_TRUE(h.search(k, out) && out.substr(0, 1) == "y") << k;
}

TEST(RolexIndex, DifferentialAgainstStdMapEmptyStart) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto c = testing::make_client(pool, 0);
  rolex::Options o = testing::small_retraining_options(4);
  o.compute_retrain_fallback = true;  // no service here
  auto idx = RIndex::create(c, o);
  auto h = idx->handle(c);
  testing::differential_run(h, 30000, 3000, 11);
  auto s = idx->stats(c);
  std::printf("differential (empty start): retrainings %.0f, synonym leaves %.0f\n",
              s["retrainings"], s["synonym_leaves"]);
  EXPECT_GT(s["synonym_leaves"], 0);
}

TEST(RolexIndex, DifferentialAgainstStdMapBulkLoadedWithService) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto c = testing::make_client(pool, 0);
  shm::ServiceHost host(pool, 0, 1,
                        [](ServiceContext<ShmTransport>& ctx) { rolex::retrain_service(ctx); });
  std::vector<Key> keys;
  for (size_t r = 0; r < 3000; r += 2) keys.push_back(testing::key_of_rank(r));
  std::sort(keys.begin(), keys.end());
  rolex::Options o;
  o.leaf_slots = 4;
  o.epsilon = 4;
  o.group_leaves = 16;
  o.retrain_threshold = 8;
  auto idx = RIndex::create(c, o, keys, [](Key k) { return testing::value_for(k, 1, 0); });
  auto h = idx->handle(c);
  // The bulk-loaded keys are in the model too.
  std::map<Key, std::string> model;
  for (Key k : keys) model[k] = testing::value_for(k, 1, 0);
  std::string out;
  for (auto& [k, v] : model) {
    ASSERT_TRUE(h.search(k, out));
    ASSERT_EQ(out, v);
  }
  for (Key k : keys) ASSERT_TRUE(h.remove(k));  // differential_run starts from empty
  testing::differential_run(h, 30000, 3000, 12);
  // The run queued groups in CirQ; the service thread retrains them when it gets a core, which on
  // a loaded machine may be after the run ends. Wait for it (bounded), then stop it.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (idx->stats(c)["retrainings"] == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  host.stop();
  auto s = idx->stats(c);
  std::printf(
      "differential (bulk+service): retrainings %.0f, synonym leaves %.0f, refreshes %.0f\n",
      s["retrainings"], s["synonym_leaves"], s["model_refreshes"]);
  EXPECT_GT(s["retrainings"], 0);
}

// retrain_on_compute (the CXL port: no memory-node CPU): the client whose insert reaches the
// threshold retrains the group itself, so with no service at all groups are retrained at the
// threshold, never left to fill their synonym tables, and nothing is lost.
TEST(RolexIndex, RetrainOnComputeRetrainsAtTheThresholdWithoutAService) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto c = testing::make_client(pool, 0);
  rolex::Options o = testing::small_retraining_options(4);
  o.retrain_on_compute = true;
  auto idx = RIndex::create(c, o);
  auto h = idx->handle(c);
  testing::differential_run(h, 30000, 3000, 14);
  auto s = idx->stats(c);
  EXPECT_GT(s["compute_retrainings"], 0);
  EXPECT_EQ(s["compute_retrainings"], s["retrainings"]);  // nobody else retrains
  EXPECT_EQ(s["full_slt_waits"], 0);  // retrained at the threshold, before the table filled
}

// Issue 39: a retrainer on a compute node that dies mid-retraining leaves its group frozen (the
// retrain lock and every LT entry naming its process, maybe a leaf header already rewritten).
// A writer of the group, told by its Liveness that the process is dead, finishes the retraining
// after the lease, and nothing is lost. Here the dead retrainer's state is written by hand.
TEST(RolexIndex, AWriterFinishesADeadRetrainersRetraining) {
  struct DeadTag final : Liveness {
    bool fenced_dead(uint32_t) const override { return false; }
    uint8_t process_tag(uint32_t) const override { return 2; }
    bool tag_dead(uint8_t t) const override { return t == 7; }
  } liveness;
  auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
  auto c = testing::make_client(pool, 0);
  std::vector<Key> keys;
  for (Key k = 1; k <= 4000; ++k) keys.push_back(k * 1000);
  auto idx = RIndex::create(c, rolex::Options{}, keys);
  auto h = idx->handle(c);
  // Synonym leaves after the full leaf that 16,000 ends: a chain of three leaves to freeze.
  for (Key k = 16'001; k <= 16'040; ++k) ASSERT_TRUE(h.insert(k, "s"));
  rolex::Remote r;
  ASSERT_TRUE(rolex::Remote::load(c, 0, root_slots::kRolex, r));
  // The dead retrainer (tag 7): the retrain lock of every group's model, every LT entry retired,
  // and one chain's first leaf rewritten with no successor (step 4 begun).
  std::optional<uint64_t> chained;  // a chain's first leaf (leaf numbers start at 0)
  for (uint64_t g = 0; g < r.meta.groups; ++g) {
    const GlobalAddress addr =
        GlobalAddress::from_raw(c.template read_value<uint64_t>(r.group_ptr(g)));
    ASSERT_EQ(c.cas(addr + rolex::kRetrainLockOffset, 0, rolex::retrain_lock_word(7)), 0u);
    rolex::ModelImage m;
    ASSERT_TRUE(rolex::detail::read_model(c, addr, m));
    for (size_t j = 0; j < m.lt.size(); ++j) {
      const uint64_t e = m.lt[j];
      c.cas(addr + rolex::kLtOffset + 8 * j, e,
            e | rolex::entry::kLock | rolex::entry::kRetired | rolex::entry::holder_bits(7));
      if (rolex::entry::next(e) && !chained) chained = rolex::entry::leaf(e);
    }
  }
  ASSERT_TRUE(chained) << "no chain with synonym leaves to freeze";
  rolex::Leaf leaf(r.geo);
  c.read(r.leaf(*chained), leaf.data(), r.geo.bytes());
  ASSERT_NE(leaf.next(), 0u);
  leaf.set_next(0);
  leaf.seal();
  c.write(r.leaf(*chained), leaf.data(), r.geo.bytes());
  // A writer that knows tag 7 is dead: its inserts go through, the retraining finished by it.
  c.set_liveness(&liveness);
  ASSERT_TRUE(h.insert(16'041, "after"));
  ASSERT_TRUE(h.insert(3'999'999, "after"));
  auto st = idx->stats(c);
  EXPECT_GE(st["locks_taken_over"], 1);
  EXPECT_GE(st["compute_retrainings"], 1);
  std::string out;
  for (Key k : keys) ASSERT_TRUE(h.search(k, out)) << k;
  for (Key k = 16'001; k <= 16'041; ++k) ASSERT_TRUE(h.search(k, out)) << k;
  ASSERT_TRUE(h.search(3'999'999, out));
  c.set_liveness(nullptr);
}

TEST(RolexIndex, PaperReadWholeRangeAndNoFetch) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto c = testing::make_client(pool, 0);
  rolex::Options o;
  o.read_whole_range = true;
  o.fetch_before_lock = false;
  o.leaf_slots = 8;
  o.compute_retrain_fallback = true;
  o.retrain_threshold = 32;
  auto idx = RIndex::create(c, o);
  auto h = idx->handle(c);
  testing::differential_run(h, 20000, 2000, 13);
}

TEST(RolexIndex, ClearErrors) {
  auto pool = testing::small_pool(1, 1, uint64_t{64} << 20);
  auto c = testing::make_client(pool, 0);
  rolex::Options bad;
  bad.epsilon = 0;
  EXPECT_THROW(RIndex::create(c, bad), ConfigError);
  std::vector<Key> unsorted{5, 3};
  EXPECT_THROW(RIndex::create(c, rolex::Options{}, unsorted), ConfigError);
  rolex::Options o;
  o.max_leaves = 4;
  o.full_slt_wait_ns = 1'000'000;
  auto idx = RIndex::create(c, o);
  auto h = idx->handle(c);
  EXPECT_THROW(h.insert(rolex::kEmptyKey, "x"), LimitError);
  EXPECT_THROW(h.insert(1, "123456789"), LimitError);
  // Leaf region of 4 leaves: fills, then a clear PoolExhausted, nothing acknowledged is lost.
  std::vector<Key> acked;
  try {
    for (Key k = 1; k < 1000; ++k)
      if (h.insert(k, "v")) acked.push_back(k);
    FAIL() << "no PoolExhausted";
  } catch (const PoolExhausted&) {
  }
  std::string out;
  for (Key k : acked) EXPECT_TRUE(h.search(k, out)) << k;
  EXPECT_EQ(acked.size(), 4u * 16u);
  rolex::Options other;
  other.root_slot = 13;
  EXPECT_THROW(RIndex::attach(c, other), ConfigError);
}

}  // namespace
}  // namespace dmrt
