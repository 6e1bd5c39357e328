// HStore single-client tests: skiplist, layouts, round trips per GET/SCAN/write, differential vs
// std::map, bulk load, degraded modes and rebuilds, reclamation, clear errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>

#include "hstore_test_util.h"
#include "indexes/hstore/skiplist.h"
#include "tests/harness/kv_suites.h"

namespace dmrt {
namespace {

using testing::delta;
using testing::HStoreCluster;

std::string val(Key k, int v) {
  return "v" + std::to_string(k) + "." + std::to_string(v);
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

}  // namespace
}  // namespace dmrt
