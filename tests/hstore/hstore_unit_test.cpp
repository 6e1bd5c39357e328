// HStore single-client tests: skiplist, layouts, round trips per GET/SCAN/write, differential vs
// std::map, bulk load, degraded modes and rebuilds, reclamation, clear errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <thread>

#include "dmrt/indexes/hstore/detail/skiplist.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/messaging.h"
#include "hstore_test_util.h"
#include "tests/harness/kv_suites.h"

namespace dmrt {
namespace {

using testing::delta;
using testing::HStoreCluster;

std::string val(Key k, int v) {
  return "v" + std::to_string(k) + "." + std::to_string(v);
}

// The list holds exactly the model's pairs, in key order (integer keys as their 8 bytes).
inline std::string model_key(Key k) {
  return key_bytes(k);
}
inline const std::string& model_key(const std::string& k) {
  return k;
}
template <class Model>
void expect_list_is(const hstore::SkipList& sl, const Model& model) {
  auto it = model.begin();
  for (auto* n = sl.first(); n; n = hstore::SkipList::next(n), ++it) {
    ASSERT_NE(it, model.end());
    ASSERT_EQ(n->key(), model_key(it->first));
    ASSERT_EQ(n->value, it->second);
  }
  EXPECT_EQ(it, model.end());
}

// Integer keys as their 8 big-endian bytes (what the SLS holds at key_size 8): numeric order.
TEST(HStoreSkipList, MatchesStdMap) {
  hstore::SkipList sl(7);
  std::map<Key, uint64_t> model;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200000; ++i) {
    Key k = rng() % 5000;
    const std::string kb = key_bytes(k);
    switch (rng() % 4) {
      case 0:
      case 1: {
        uint64_t v = rng();
        ASSERT_EQ(sl.upsert(kb, v), model.count(k) == 0);
        model[k] = v;
        break;
      }
      case 2:
        ASSERT_EQ(sl.erase(kb), model.erase(k) == 1);
        break;
      default: {
        uint64_t v = 0;
        auto it = model.find(k);
        ASSERT_EQ(sl.find(kb, v), it != model.end());
        if (it != model.end()) {
          ASSERT_EQ(v, it->second);
        }
        auto lb = model.lower_bound(k);
        auto* n = sl.lower_bound(kb);
        for (int j = 0; j < 5; ++j, ++lb, n = n ? hstore::SkipList::next(n) : nullptr) {
          ASSERT_EQ(n == nullptr, lb == model.end());
          if (!n) break;
          ASSERT_EQ(n->pre, lb->first);
          ASSERT_EQ(n->key(), key_bytes(lb->first));
        }
      }
    }
    ASSERT_EQ(sl.size(), model.size());
  }
  std::vector<std::pair<std::string, uint64_t>> rows;
  for (auto& [k, v] : model) rows.push_back({key_bytes(k), v});
  hstore::SkipList built;
  built.build_sorted(rows);
  size_t i = 0;
  for (auto* n = built.first(); n; n = hstore::SkipList::next(n), ++i)
    ASSERT_EQ(n->key(), rows[i].first);
  EXPECT_EQ(i, rows.size());
  built.upsert(key_bytes(model.empty() ? 1 : model.rbegin()->first + 1), 9);
  EXPECT_EQ(built.size(), rows.size() + 1);
}

// The hot-node cache (skiplist.h): an overwrite of a cached key skips the descent; an erased
// node is never answered from the cache, even once its memory holds another key.
TEST(HStoreSkipList, HotCacheUpsertEraseReinsert) {
  hstore::SkipList sl(7);
  // Key 0: a freed node's first word (where `pre` was) holds the free list's next pointer, null
  // here, so a cache that kept the erased node would match it.
  const std::string a = key_bytes(0);
  ASSERT_TRUE(sl.upsert(a, 1));
  EXPECT_EQ(sl.hot_hits(), 0u);
  ASSERT_FALSE(sl.upsert(a, 2));  // the node the insert made
  EXPECT_EQ(sl.hot_hits(), 1u);
  uint64_t v = 0;
  ASSERT_TRUE(sl.find(a, v));
  EXPECT_EQ(v, 2u);
  EXPECT_EQ(sl.hot_hits(), 2u);
  ASSERT_TRUE(sl.erase(a));
  EXPECT_FALSE(sl.find(a, v));
  ASSERT_TRUE(sl.upsert(a, 3));  // new again: the cache forgot the erased node
  EXPECT_EQ(sl.hot_hits(), 2u);
  EXPECT_EQ(sl.size(), 1u);
  ASSERT_EQ(sl.first()->key(), a);
  EXPECT_EQ(sl.first()->value, 3u);
  EXPECT_EQ(hstore::SkipList::next(sl.first()), nullptr);

  // The erased node's memory goes to the next insert of its tower height: insert other keys
  // until one gets it, then the erased key must still be absent and insert anew.
  std::map<Key, uint64_t> model{{0, 3}};
  for (Key k = 1000; k < 1010; ++k) {
    ASSERT_TRUE(sl.upsert(key_bytes(k), k));
    model[k] = k;
  }
  const hstore::SkipList::Node* freed = sl.lower_bound(a);
  ASSERT_EQ(freed->key(), a);
  ASSERT_FALSE(sl.upsert(a, 5));  // a hit
  EXPECT_EQ(sl.hot_hits(), 3u);
  ASSERT_TRUE(sl.erase(a));
  model.erase(0);
  Key reused = 0;
  for (Key k = 2000; k < 3000 && !reused; ++k) {
    ASSERT_TRUE(sl.upsert(key_bytes(k), k));
    model[k] = k;
    if (sl.lower_bound(key_bytes(k)) == freed) reused = k;
  }
  ASSERT_NE(reused, 0u) << "no insert reused the erased node";
  EXPECT_FALSE(sl.find(a, v));
  ASSERT_TRUE(sl.upsert(a, 6));
  model[0] = 6;
  ASSERT_TRUE(sl.find(key_bytes(reused), v));
  EXPECT_EQ(v, reused);
  ASSERT_TRUE(sl.find(a, v));
  EXPECT_EQ(v, 6u);
  expect_list_is(sl, model);

  // clear() keeps the nodes' memory (and their bytes) for reuse: no key is found in it after.
  const uint64_t hits = sl.hot_hits();
  sl.clear();
  for (const auto& [k, kv] : model) {
    ASSERT_FALSE(sl.find(key_bytes(k), v)) << k;
    ASSERT_TRUE(sl.upsert(key_bytes(k), kv + 1)) << k;
  }
  EXPECT_EQ(sl.size(), model.size());
  EXPECT_EQ(sl.hot_hits(), hits);

  // Without a cache nothing is answered from it.
  hstore::SkipList plain(7, 8, 0);
  ASSERT_TRUE(plain.upsert(a, 1));
  ASSERT_FALSE(plain.upsert(a, 2));
  ASSERT_TRUE(plain.find(a, v));
  EXPECT_EQ(v, 2u);
  EXPECT_EQ(plain.hot_hits(), 0u);
}

// The cache grows with the list (empty again each time), up to its bound; build_sorted sizes it
// for the rows, clear shrinks it.
TEST(HStoreSkipList, HotCacheGrowsWithTheList) {
  hstore::SkipList sl(5, 8, 16384);
  EXPECT_EQ(sl.hot_slots(), 4096u);
  std::map<Key, uint64_t> model;
  for (Key k = 0; k < 20000; ++k) {
    ASSERT_TRUE(sl.upsert(key_bytes(k * 7919), k));
    model[k * 7919] = k;
    if (k + 1 == 4096 || k + 1 == 4097 || k + 1 == 8193) {
      EXPECT_EQ(sl.hot_slots(), k + 1 == 4096 ? 4096u : k + 1 == 4097 ? 8192u : 16384u) << k;
    }
  }
  EXPECT_EQ(sl.hot_slots(), 16384u);  // its bound
  const uint64_t hits = sl.hot_hits();
  for (auto& [k, v] : model) {
    ASSERT_FALSE(sl.upsert(key_bytes(k), v + 1));
    ASSERT_FALSE(sl.upsert(key_bytes(k), v + 2));  // a hit, whatever the first found
    v += 2;
  }
  EXPECT_GE(sl.hot_hits() - hits, model.size());
  expect_list_is(sl, model);

  std::vector<std::pair<std::string, uint64_t>> rows;
  for (Key k = 0; k < 10000; ++k) rows.push_back({key_bytes(k), k});
  hstore::SkipList built(5, 8);
  built.build_sorted(rows);
  EXPECT_EQ(built.hot_slots(), 16384u);
  for (Key k = 0; k < 10000; ++k) {
    uint64_t v = 0;
    ASSERT_FALSE(built.upsert(key_bytes(k), k + 5));
    ASSERT_TRUE(built.find(key_bytes(k), v));
    ASSERT_EQ(v, k + 5);
  }
  EXPECT_GE(built.hot_hits(), 10000u);
  built.clear();
  EXPECT_EQ(built.hot_slots(), 4096u);
  EXPECT_EQ(built.first(), nullptr);
}

// Keys longer than 8 bytes that share their first 8 (and shorter keys that are prefixes of
// them) each keep their own node and value, whether they share one cache slot or not.
TEST(HStoreSkipList, HotCacheKeysSharingTheirFirstEightBytes) {
  const std::vector<std::string> keys = {
      "prefix0",   "prefix00",           std::string("prefix00\0", 9), "prefix00a", "prefix00ab",
      "prefix00b", std::string(32, 'p'), std::string(31, 'p') + 'q',   "prefix01",  "prefix00aa"};
  for (size_t slots : {size_t{4096}, size_t{1}}) {
    hstore::SkipList sl(9, 32, slots);
    std::map<std::string, uint64_t> model;
    for (int round = 0; round < 3; ++round)
      for (size_t i = 0; i < keys.size(); ++i) {
        ASSERT_EQ(sl.upsert(keys[i], 100 * round + i), round == 0) << slots << " " << i;
        ASSERT_FALSE(sl.upsert(keys[i], 100 * round + i + 1));  // the same key again: a hit
        model[keys[i]] = 100 * round + i + 1;
      }
    // Every second upsert hits; with one slot the first of a round never does (the slot holds
    // the key before), with 4096 it does unless two of the ten keys share a slot.
    if (slots == 1)
      EXPECT_EQ(sl.hot_hits(), 3 * keys.size());
    else
      EXPECT_GE(sl.hot_hits(), 3 * keys.size());
    for (const auto& k : keys) {
      uint64_t v = 0;
      ASSERT_TRUE(sl.find(k, v));
      EXPECT_EQ(v, model[k]) << slots;
    }
    expect_list_is(sl, model);
  }
}

// A differential run with a tiny cache (collisions, evictions), byte keys sharing prefixes,
// erases, clear and build_sorted, against std::map.
TEST(HStoreSkipList, HotCacheMatchesStdMap) {
  std::mt19937_64 rng(17);
  auto some_key = [&rng] {
    // Most keys are 8..12 bytes whose first 8 are one of 16; some are 1..8 bytes.
    std::string k = "sharedpf";
    k.resize(rng() % 4 == 0 ? 1 + rng() % 8 : 8 + rng() % 5, 'x');
    for (size_t i = 6; i < k.size(); ++i) k[i] = "ab\0\xff"[rng() % 4];
    return k;
  };
  hstore::SkipList sl(3, 24, 8);
  std::map<std::string, uint64_t> model;
  for (int i = 0; i < 100000; ++i) {
    std::string k = some_key();
    switch (rng() % 16) {
      case 0:
      case 1:
      case 2:
        ASSERT_EQ(sl.erase(k), model.erase(k) == 1);
        break;
      case 3:
      case 4: {
        uint64_t v = 0;
        auto it = model.find(k);
        ASSERT_EQ(sl.find(k, v), it != model.end());
        if (it != model.end()) {
          ASSERT_EQ(v, it->second);
        }
        break;
      }
      case 5:
        if (rng() % 200 == 0) {  // rarely: start again, empty or from sorted rows
          std::vector<std::pair<std::string, uint64_t>> rows(model.begin(), model.end());
          if (rng() % 2) {
            sl.clear();
            model.clear();
          } else {
            sl.build_sorted(rows);
          }
        }
        break;
      default: {  // upserts, mostly of a key just used again
        uint64_t v = rng();
        for (int r = 0; r < 2; ++r, v += 1) {
          ASSERT_EQ(sl.upsert(k, v), model.count(k) == 0);
          model[k] = v;
        }
      }
    }
    ASSERT_EQ(sl.size(), model.size());
  }
  expect_list_is(sl, model);
  EXPECT_GT(sl.hot_hits(), 60000u);  // the second upsert of each pair (11/16 of 100,000 steps)
}

TEST(HStoreLayout, SlotAndRecord) {
  GlobalAddress a(3, 0x123440);
  uint64_t w = hstore::slot::make(0xab, 27, a);
  EXPECT_EQ(hstore::slot::sig(w), 0xab);
  EXPECT_EQ(hstore::slot::bytes(w), 27u * 8);
  EXPECT_EQ(hstore::slot::addr(w), a);
  EXPECT_TRUE(hstore::slot::live(w));
  EXPECT_FALSE(hstore::slot::live(hstore::slot::kReserved));
  EXPECT_THROW(hstore::slot::make(1, 3, GlobalAddress(300, 64)), LimitError);
  std::string rec;
  hstore::Record::encode(42, "hello", rec);
  EXPECT_EQ(rec.size(), 24u);
  using C = hstore::Record::Check;
  EXPECT_EQ(hstore::Record::classify(rec.data(), 24, 42), C::kMatch);
  EXPECT_EQ(hstore::Record::classify(rec.data(), 24, 43), C::kOtherKey);
  EXPECT_EQ(hstore::Record::value(rec.data()), "hello");
  rec[17] ^= 1;
  EXPECT_EQ(hstore::Record::classify(rec.data(), 24, 42), C::kTorn);
  EXPECT_THROW(hstore::Record::encode(1, std::string(hstore::Record::kMaxValue + 1, 'x'), rec),
               LimitError);
  hstore::Record::encode(1, std::string(hstore::Record::kMaxValue, 'x'), rec);
  EXPECT_EQ(rec.size(), hstore::Record::kMaxBytes);
}

hstore::Options quiet_options() {
  hstore::Options o;
  o.expected_keys = 4096;
  o.status_poll_ns = 60'000'000'000ull;  // no status polls inside a measured call
  // No slow-reader retries either: a loaded machine can deschedule a client for more than the
  // default 25 ms between its reads (safe, but it would add a request to a measured call).
  o.grace_ns = 20'000'000'000ull;
  return o;
}

// Paper §5.3: a GET is one RTT for the bucket and one for the record; a SCAN of n items is one
// request plus n record reads; a write is the record WRITE plus one request.
TEST(HStoreRoundTrips, GetIsTwoScanIsOneRequestPlusReads) {
  auto o = quiet_options();
  HStoreCluster cl(o);
  auto c = cl.client(1);
  auto h = cl.index->handle(c);
  constexpr Key kN = 2000;
  uint64_t ins_rtt = 0, ins_msg = 0;
  for (Key k = 1; k <= kN; ++k) {
    auto d = delta(c, [&] { ASSERT_TRUE(h.insert(k * 10, val(k, 0))); });
    ins_rtt += d.round_trips;
    ins_msg += d.messages;
  }
  std::printf("INSERT: %.4f round trips + %.4f requests/op\n", double(ins_rtt) / kN,
              double(ins_msg) / kN);
  EXPECT_EQ(ins_msg, kN);
  // One WRITE each, plus the allocator's occasional chunk claim (one FAA per 1 MiB).
  EXPECT_GE(ins_rtt, kN);
  EXPECT_LE(ins_rtt, kN + 8);
  std::string out;
  uint64_t get_rtt = 0, get_msg = 0, hops = 0;
  for (Key k = 1; k <= kN; ++k) {
    auto d = delta(c, [&] {
      ASSERT_TRUE(h.search(k * 10, out));
      ASSERT_EQ(out, val(k, 0));
    });
    get_rtt += d.round_trips;
    get_msg += d.messages;
    hops += d.round_trips - 2;
  }
  EXPECT_EQ(get_msg, 0u);
  // 2 per GET; a key in an overflow bucket adds one per hop, a false signature match one read.
  std::printf("GET: %.4f round trips/op over %llu hits (%llu extra)\n", double(get_rtt) / kN,
              (unsigned long long)kN, (unsigned long long)hops);
  EXPECT_LE(hops, kN / 50);
  // Keys that sit in their head bucket with no signature twin: exactly 2.
  size_t exact = 0;
  for (Key k = 1; k <= kN; ++k) {
    auto d = delta(c, [&] { h.search(k * 10, out); });
    if (d.round_trips == 2) ++exact;
    EXPECT_GE(d.round_trips, 2u);
  }
  EXPECT_GE(exact, kN * 95 / 100);
  // Misses: the bucket decides (1), unless a signature matches or the chain goes on.
  uint64_t miss_rtt = 0;
  for (Key k = 1; k <= kN; ++k)
    miss_rtt += delta(c, [&] { EXPECT_FALSE(h.search(k * 10 + 5, out)); }).round_trips;
  std::printf("GET miss: %.4f round trips/op\n", double(miss_rtt) / kN);
  EXPECT_LE(miss_rtt, kN + kN / 10);
  // SCAN: one request, n record reads (paper: sequential), all values right.
  std::vector<std::pair<Key, std::string>> rows;
  for (size_t n : {1, 10, 100}) {
    auto d = delta(c, [&] { h.scan(15, n, rows); });
    ASSERT_EQ(rows.size(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(rows[i].first, 20 + 10 * i);
      ASSERT_EQ(rows[i].second, val(2 + i, 0));
    }
    EXPECT_EQ(d.messages, 1u) << n;
    EXPECT_EQ(d.round_trips, n) << n;
    EXPECT_EQ(d.count(VerbKind::kRead), n) << n;
    std::printf("SCAN(%zu): %llu request, %llu round trips\n", n, (unsigned long long)d.messages,
                (unsigned long long)d.round_trips);
  }
  // Updates and deletes.
  uint64_t upd_rtt = 0, del_rtt = 0, del_msg = 0;
  for (Key k = 1; k <= 200; ++k) {
    upd_rtt += delta(c, [&] { ASSERT_TRUE(h.update(k * 10, val(k, 1))); }).round_trips;
    auto d = delta(c, [&] { ASSERT_TRUE(h.remove(k * 10)); });
    del_rtt += d.round_trips;
    del_msg += d.messages;
  }
  std::printf(
      "UPDATE: %.4f round trips + 1 request/op; DELETE: %.4f round trips + %.4f requests/op\n",
      upd_rtt / 200.0, del_rtt / 200.0, del_msg / 200.0);
  EXPECT_LE(upd_rtt, 200u + 2);
  EXPECT_EQ(del_rtt, 0u);
  EXPECT_EQ(del_msg, 200u);
  auto s = cl.index->stats(cl.setup);
  std::printf("batches %.0f (mean %.2f entries), overflow buckets %.0f, load factor %.3f\n",
              s["batches"], s["batch_entries_mean"], s["overflow_buckets"], s["load_factor"]);
  EXPECT_EQ(s["keys"], double(kN - 200));
}

TEST(HStoreRoundTrips, BatchedScanReads) {
  auto o = quiet_options();
  o.scan_reads_per_trip = 16;
  HStoreCluster cl(o);
  auto c = cl.client(1);
  auto h = cl.index->handle(c);
  for (Key k = 1; k <= 300; ++k) ASSERT_TRUE(h.insert(k, val(k, 0)));
  std::vector<std::pair<Key, std::string>> rows;
  auto d = delta(c, [&] { h.scan(1, 100, rows); });
  ASSERT_EQ(rows.size(), 100u);
  EXPECT_EQ(d.messages, 1u);
  EXPECT_EQ(d.round_trips, 7u);  // ceil(100 / 16)
  d = delta(c, [&] { h.scan(290, 100, rows); });
  EXPECT_EQ(rows.size(), 11u);
  EXPECT_EQ(d.round_trips, 1u);
  d = delta(c, [&] { h.scan(1000, 100, rows); });
  EXPECT_TRUE(rows.empty());
  EXPECT_EQ(d.messages, 1u);
  EXPECT_EQ(d.round_trips, 0u);
}

TEST(HStoreDifferential, AgainstStdMap) {
  for (bool sync : {false, true}) {
    hstore::Options o;
    o.expected_keys = 512;  // small table: overflow chains get used
    o.load_factor = 1.0;
    o.overflow_fraction = 1.0;
    o.sync_skiplist = sync;
    o.logs = 2;
    o.partitions = 3;
    HStoreCluster cl(o);
    auto c = cl.client(1);
    harness::DifferentialOptions d;
    d.keys = 1024;
    harness::differential_test([&] { return cl.index->handle(c); }, testing::scaled(20000),
                               sync ? 5 : 6, d);
    auto s = cl.index->stats(cl.setup);
    std::printf(
        "differential (sync=%d): overflow buckets %.0f, batches %.0f, sls applied async %.0f / by "
        "drain %.0f\n",
        sync, s["overflow_buckets"], s["batches"], s["sls_applied_async"],
        s["sls_applied_by_drain"]);
    EXPECT_GT(s["overflow_buckets"], 0);
  }
}

TEST(HStoreBulkLoad, SearchScanAndSkiplistBuiltFromTheTable) {
  std::vector<Key> keys;
  for (Key k = 1; k <= 20000; ++k) keys.push_back(k * 7);
  hstore::Options o;
  o.expected_keys = keys.size();
  HStoreCluster cl(o, 2, 1, uint64_t{128} << 20, keys, [](Key k) { return val(k, 9); });
  auto c = cl.client(1);
  auto h = cl.index->handle(c);
  std::string out;
  for (Key k : keys) {
    ASSERT_TRUE(h.search(k, out));
    ASSERT_EQ(out, val(k, 9));
  }
  EXPECT_FALSE(h.search(8, out));
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(7 * 500 + 1, 50, rows);
  ASSERT_EQ(rows.size(), 50u);
  EXPECT_EQ(rows[0].first, 7u * 501);
  auto s = cl.index->stats(cl.setup);
  EXPECT_EQ(s["sls_keys"], double(keys.size()));
  EXPECT_EQ(s["sls_rebuild_keys"], double(keys.size()));
}

// Paper §3.2 failure handling and §5.5 degraded service, one client: losing the SLS leaves GETs
// unchanged (2 round trips); losing the HTS moves GETs to the SLS (1 request + 1 record read
// after the bucket read that finds the table down); each rebuild restores everything.
TEST(HStoreRecovery, DegradedModesAndRebuildsSingleClient) {
  auto o = quiet_options();  // one client, no operation in flight across a failure: no polls needed
  HStoreCluster cl(o);
  auto c = cl.client(1);
  auto h = cl.index->handle(c);
  std::map<Key, std::string> model;
  for (Key k = 1; k <= 1000; ++k) {
    ASSERT_TRUE(h.insert(k, val(k, 0)));
    model[k] = val(k, 0);
  }
  for (Key k = 1; k <= 1000; k += 3) {
    ASSERT_TRUE(h.update(k, val(k, 1)));
    model[k] = val(k, 1);
  }
  std::string out;
  auto check_all = [&] {
    for (auto& [k, v] : model) {
      ASSERT_TRUE(h.search(k, out)) << k;
      ASSERT_EQ(out, v);
    }
    std::vector<std::pair<Key, std::string>> rows;
    h.scan(0, model.size() + 5, rows);
    ASSERT_EQ(rows.size(), model.size());
    auto it = model.begin();
    for (size_t i = 0; i < rows.size(); ++i, ++it) {
      ASSERT_EQ(rows[i].first, it->first);
      ASSERT_EQ(rows[i].second, it->second);
    }
  };
  // SLS lost.
  cl.servers->fail_sls(cl.setup);
  for (Key k = 1; k <= 1000; k += 7) {
    auto d = delta(c, [&] { ASSERT_TRUE(h.search(k, out)); });
    EXPECT_EQ(out, model[k]);
    EXPECT_GE(d.round_trips, 2u);
    EXPECT_EQ(d.messages, 0u);
  }
  cl.servers->rebuild_sls();
  ASSERT_TRUE(cl.servers->wait_serving(cl.setup, 30'000'000'000ull));
  check_all();
  // HTS lost: the table is zeroed; GETs ask the SLS.
  cl.servers->fail_hts(cl.setup);
  for (Key k = 2; k <= 1000; k += 7) {
    auto d = delta(c, [&] { ASSERT_TRUE(h.search(k, out)); });
    EXPECT_EQ(out, model[k]);
    EXPECT_EQ(d.messages, 1u);
    EXPECT_EQ(d.round_trips, 2u);  // bucket+status (finds the table down), then the record
  }
  EXPECT_FALSE(h.search(5000, out));
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(10, 5, rows);  // SCAN is unchanged (paper §5.5)
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].first, 10u);
  cl.servers->rebuild_hts();
  ASSERT_TRUE(cl.servers->wait_serving(cl.setup, 30'000'000'000ull));
  check_all();
  for (Key k = 1; k <= 1000; k += 5) {
    ASSERT_TRUE(h.remove(k));
    model.erase(k);
  }
  ASSERT_TRUE(h.insert(5000, "new"));
  model[5000] = "new";
  check_all();
  auto s = cl.index->stats(cl.setup);
  std::printf("rebuilds: SLS %.0f (last %.2f ms, %.0f keys), HTS %.0f (last %.2f ms, %.0f keys)\n",
              s["sls_rebuilds"], s["sls_rebuild_ms"], s["sls_rebuild_keys"], s["hts_rebuilds"],
              s["hts_rebuild_ms"], s["hts_rebuild_keys"]);
  EXPECT_EQ(s["hts_rebuilds"], 1);
  EXPECT_EQ(s["sls_rebuilds"], 2);  // the start counts as one
  EXPECT_EQ(s["hts_rebuild_keys"], 1000);
}

// Old records are freed only after the grace period (notes A17): a reader that got the old
// address just before the update has grace/2 to read it, the freer waits grace.
TEST(HStoreReclamation, OldRecordsWaitForTheGracePeriod) {
  auto o = quiet_options();
  o.grace_ns = 200'000'000;  // 200 ms
  HStoreCluster cl(o);
  auto c = cl.client(1);
  auto h = cl.index->handle(c);
  ASSERT_TRUE(h.insert(1, "a"));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(h.update(1, "b" + std::to_string(i)));
  EXPECT_EQ(h.limbo_records(), 10u);
  EXPECT_EQ(cl.index->stats()["records_freed"], 0);
  uint64_t t0 = c.now_ns();
  while (c.now_ns() - t0 < 250'000'000) c.pause();
  ASSERT_TRUE(h.update(1, "c"));  // reclaims on its way in
  EXPECT_EQ(h.limbo_records(), 1u);
  EXPECT_EQ(cl.index->stats()["records_freed"], 10);
  // A failed insert's record was never published: freed at once, nothing in limbo.
  EXPECT_FALSE(h.insert(1, "d"));
  EXPECT_EQ(h.limbo_records(), 1u);
}

TEST(HStoreErrors, ClearErrors) {
  auto pool = testing::small_pool(1, 1, uint64_t{64} << 20);
  auto c = testing::make_client(pool, 1);
  EXPECT_THROW(testing::HIndex::attach(c, {}), ConfigError);
  hstore::Options bad;
  bad.logs = 0;
  EXPECT_THROW(testing::HIndex::create(c, bad), ConfigError);
  bad = {};
  bad.load_factor = 0;
  EXPECT_THROW(testing::HIndex::create(c, bad), ConfigError);
  bad = {};
  bad.sls_node = 1;  // the compute node
  EXPECT_THROW(testing::HIndex::create(c, bad), ConfigError);
  // One memory node hosts both servers; a tiny table fills its overflow area.
  hstore::Options o;
  o.expected_keys = 1;
  o.load_factor = 1.0;
  o.overflow_fraction = 0;  // 16 heads + 16 overflow buckets = 224 slots
  HStoreCluster cl(o, 1, 1, uint64_t{64} << 20);
  auto c2 = cl.client(1);
  auto h = cl.index->handle(c2);
  EXPECT_THROW(h.insert(1, std::string(hstore::Record::kMaxValue + 1, 'x')), LimitError);
  std::vector<Key> acked;
  try {
    for (Key k = 1; k < 10000; ++k)
      if (h.insert(k, "v")) acked.push_back(k);
    FAIL() << "no PoolExhausted";
  } catch (const PoolExhausted&) {
  }
  EXPECT_LE(acked.size(), 32u * 7u);
  EXPECT_GE(acked.size(), 16u * 7u);
  std::string out;
  for (Key k : acked) EXPECT_TRUE(h.search(k, out)) << k;
  ASSERT_TRUE(h.remove(acked[0]));
  EXPECT_TRUE(h.insert(acked[0], "back"));  // a freed slot is reused
}

// A malformed slot in a server's own inbox (any writer of the region can leave one: here a bogus
// sequence word in the HTS's request inbox and the SLS's) is counted and skipped; the servers
// keep serving, where it used to stop the hosted service.
TEST(HStoreHostile, MalformedSlotsInServerInboxesAreCountedAndSkipped) {
  // The ring throws for a malformed slot and the server fiber catches it and serves on. On a fiber
  // stack AddressSanitizer cannot follow that (boost.context has no ASan annotations here): the
  // frames the exception left stay poisoned and later calls report false errors. The case runs
  // in the release build.
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer cannot follow an exception caught on a fiber stack";
#endif
  hstore::Options o;
  o.expected_keys = 4096;
  HStoreCluster cl(o);
  testing::ShmClient c = cl.client(1);
  auto h = cl.index->handle(c);
  ASSERT_TRUE(h.insert(1, "one"));
  const hstore::Meta& m = cl.index->meta();
  const MailboxGeometry& g = cl.pool->config().mailbox;
  for (auto [node, box] :
       {std::pair{m.hts_node, m.hts_inbox}, std::pair{m.sls_node, m.sls_inbox}}) {
    std::byte* inbox = cl.pool->region(node).base + layout::mailbox_offset(g, box);
    const uint64_t head = local::load_word(inbox + MailboxRing::kHeadOffset);
    local::store_word(inbox + MailboxRing::kSlotsOffset + (head & (g.slots - 1)) * g.slot_bytes,
                      uint64_t{1} << 40);
  }
  // The rings repair a slot whose word stayed put 200 ms; the servers poll meanwhile.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  for (Key k = 2; k <= 50; ++k) ASSERT_TRUE(h.insert(k, "v" + std::to_string(k)));
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(1, 3, rows);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::pair<Key, std::string>{1, "one"}));
  EXPECT_EQ(cl.index->stats(cl.setup).at("malformed_messages"), 2.0);
}

}  // namespace
}  // namespace dmrt
