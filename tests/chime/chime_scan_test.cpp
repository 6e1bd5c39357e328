// CHIME range scans (§4.4, options.h `scan_intersection`): over integer-dense keys a scan reads,
// of the leaves its range covers in part, only the neighborhoods of the integer keys it covers
// there. One client on sim (deterministic), warm cache, keys 1..n inserted in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "../runtime/test_cluster.h"
#include "../sherman/kv_checks.h"
#include "../sim/small_cluster.h"
#include "dmrt/indexes/chime/chime.h"

namespace dmrt {
namespace {

using testing::value_for;
using ScanSimTree = chime::Tree<SimTransport>;
using ScanShmTree = chime::Tree<ShmTransport>;

struct DenseScanTree {
  sim::Cluster cluster{sim::small_test_cluster(1, 1)};
  sim::SimClient c = sim::untimed_setup_client(cluster);
  std::shared_ptr<ScanSimTree> t;
  std::unique_ptr<ScanSimTree::Handle> h;
  static constexpr Key n = 20000;
  explicit DenseScanTree(chime::Options o) {
    o.speculative_read = false;  // a search's cost is its neighborhood READ
    t = ScanSimTree::create(c, o);
    h = std::make_unique<ScanSimTree::Handle>(t->handle(c));
    for (Key k = 1; k <= n; ++k) EXPECT_TRUE(h->insert(k, value_for(k, 0, 0)));
    std::string v;
    for (Key k = 1; k <= n; ++k) h->search(k, v);  // warm the internal-node cache
  }
  template <class F>
  VerbCounters measure(F&& fn) {
    VerbCounters before = c.counters().total;
    fn();
    return c.counters().total - before;
  }
};

struct ScanFigures {
  double round_trips = 0, reads = 0, bytes = 0;
  uint64_t worst_round_trips = 0;
  bool operator==(const ScanFigures&) const = default;
};

// 400 scans of 1..100 rows from spread start keys; every result is exactly the keys in order.
ScanFigures dense_scans(bool intersection) {
  chime::Options o;
  EXPECT_TRUE(o.scan_intersection);  // the paper's scan is the default
  o.scan_intersection = intersection;
  DenseScanTree w(o);
  EXPECT_EQ(w.t->sync(), chime::Sync::kVersions);
  ScanFigures f;
  std::vector<std::pair<Key, std::string>> rows;
  const size_t scans = 400;
  for (size_t i = 0; i < scans; ++i) {
    const size_t count = 1 + (i * 37) % 100;
    const Key from = 1 + (i * 7919) % (DenseScanTree::n - count);
    auto d = w.measure([&] { w.h->scan(from, count, rows); });
    EXPECT_EQ(rows.size(), count);
    for (size_t r = 0; r < rows.size(); ++r) {
      EXPECT_EQ(rows[r].first, from + r);
      EXPECT_EQ(rows[r].second, value_for(from + r, 0, 0));
    }
    f.round_trips += double(d.round_trips) / scans;
    f.reads += double(d.count(VerbKind::kRead)) / scans;
    f.bytes += double(d.bytes_read) / scans;
    f.worst_round_trips = std::max<uint64_t>(f.worst_round_trips, d.round_trips);
  }
  return f;
}

TEST(ChimeScan, DenseKeysReadOnlyTheNeighborhoodsOfTheRange) {
  ScanFigures on = dense_scans(true), off = dense_scans(false);
  EXPECT_EQ(on, dense_scans(true));  // deterministic
  std::printf(
      "chime scan, dense keys, 1..100 rows: intersection %.2f RTT (worst %llu), %.2f READs, "
      "%.0f B; whole leaves %.2f RTT (worst %llu), %.2f READs, %.0f B\n",
      on.round_trips, (unsigned long long)on.worst_round_trips, on.reads, on.bytes, off.round_trips,
      (unsigned long long)off.worst_round_trips, off.reads, off.bytes);
  // The window names every leaf it needs from the cache: one round trip per scan.
  EXPECT_EQ(on.worst_round_trips, 1u);
  // Partly covered leaves cost part of a leaf, and the plan stops at the window's end (whole
  // leaves: as many as the rows need at half-full leaves).
  EXPECT_LE(on.bytes, 0.9 * off.bytes);
  EXPECT_GT(on.reads, off.reads);  // the price: a few READs per partly covered leaf
}

// A one-row scan reads the neighborhood of its key, as a search does: same READs, same bytes. In
// the rightmost leaf (no end to its interval, so no density to judge by) it reads the leaf whole.
TEST(ChimeScan, OneRowScanReadsOneNeighborhood) {
  DenseScanTree w(chime::Options{});
  std::vector<std::pair<Key, std::string>> rows;
  std::string v;
  auto whole = w.measure([&] { w.h->scan(DenseScanTree::n, 1, rows); });
  EXPECT_EQ(whole.bytes_read, w.t->geometry().remote_bytes());
  for (Key k : {Key{17}, Key{5000}, Key{12345}, Key{19000}}) {
    auto s = w.measure([&] { EXPECT_TRUE(w.h->search(k, v)); });
    auto d = w.measure([&] { w.h->scan(k, 1, rows); });
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].first, k);
    EXPECT_EQ(d.round_trips, 1u);
    EXPECT_EQ(d.count(VerbKind::kRead), s.count(VerbKind::kRead)) << k;
    EXPECT_EQ(d.bytes_read, s.bytes_read) << k;
    EXPECT_LE(d.bytes_read, 165u);  // 8 entries of 19 B, a 10 B replica, 2-3 line versions
  }
}

// Gaps (deleted keys) make a window come up short: the scan widens it and goes on; sparse keys
// (too few per integer) fall back to whole leaves. Results match a std::map either way.
TEST(ChimeScan, GapsAndSparseKeysStayExact) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto c = testing::make_client(pool, 0);
  chime::Options o;
  o.span = 16;
  o.neighborhood = 4;
  o.internal_span = 6;
  auto t = ScanShmTree::create(c, o);
  auto h = t->handle(c);
  std::map<Key, std::string> model;
  for (Key k = 1; k <= 6000; ++k) {
    Key key = k <= 4000 ? k : 4000 + (k - 4000) * 1000003;  // dense, then sparse
    ASSERT_TRUE(h.insert(key, value_for(key, 0, 0)));
    model[key] = value_for(key, 0, 0);
  }
  for (Key k = 1000; k < 1600; ++k)  // a gap of 600 keys, and every third key after it
    if (k < 1300 || k % 3 == 0) {
      ASSERT_TRUE(h.remove(k));
      model.erase(k);
    }
  std::vector<std::pair<Key, std::string>> rows;
  for (Key from : {Key{1}, Key{990}, Key{1001}, Key{1299}, Key{3990}, Key{4001}, Key{5000000}}) {
    for (size_t count : {1u, 7u, 50u, 300u}) {
      h.scan(from, count, rows);
      auto it = model.lower_bound(from);
      size_t r = 0;
      for (; r < count && it != model.end(); ++r, ++it) {
        ASSERT_LT(r, rows.size()) << from << " " << count;
        EXPECT_EQ(rows[r].first, it->first) << from << " " << count;
        EXPECT_EQ(rows[r].second, it->second);
      }
      EXPECT_EQ(rows.size(), r) << from << " " << count;
    }
  }
  auto st = t->stats();
  EXPECT_GT(st["scan_windows"], 0);  // the dense part took the window path
  EXPECT_GT(st["scan_partial_leaves"], 0);
}

}  // namespace
}  // namespace dmrt
