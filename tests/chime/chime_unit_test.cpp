// CHIME, single client: std::map differential runs per technique combination, and
// deterministic round trips / bytes per op from client counters (paper Table 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "../runtime/test_cluster.h"
#include "../sherman/kv_checks.h"
#include "dmrt/indexes/chime/chime.h"
#include "dmrt/indexes/chime/detail/hotspot.h"
#include "dmrt/indexes/sherman/sherman.h"

namespace dmrt {
namespace {

using CTree = chime::Tree<ShmTransport>;
using testing::key_of_rank;
using testing::value_for;

struct Fixture {
  std::shared_ptr<shm::Pool> pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  testing::ShmClient c = testing::make_client(pool, 0);
};

chime::Options small(uint32_t span, uint32_t h) {
  chime::Options o;
  o.span = span;
  o.neighborhood = h;
  o.internal_span = 6;
  o.hotspot_bytes = 1 << 16;
  return o;
}

// The hotspot buffer's bucket is mix64(key) % buckets without a division: it must be the same
// remainder for every divisor (the default table's, 1, powers of two, the largest) and numerator.
TEST(ChimeUnit, HotspotExactModIsTheRemainder) {
  std::mt19937_64 rng(7);
  const uint64_t divisors[] = {1,
                               2,
                               3,
                               7,
                               64,
                               491'520,  // buckets of the default 30 MB table
                               (uint64_t{1} << 32) - 1,
                               uint64_t{1} << 32,
                               (uint64_t{1} << 32) + 1,
                               0x9e3779b97f4a7c15ull,
                               (uint64_t{1} << 63) + 1,
                               ~uint64_t{0} - 1,
                               ~uint64_t{0}};
  for (uint64_t d : divisors) {
    const chime::ExactMod m(d);
    for (uint64_t x : {uint64_t{0}, uint64_t{1}, d - 1, d, d + 1, ~uint64_t{0}, ~uint64_t{0} - 1})
      ASSERT_EQ(m.of(x), x % d) << x << " % " << d;
    for (int i = 0; i < 200'000; ++i) {
      const uint64_t x = rng() >> (i % 64);  // numerators of every width
      ASSERT_EQ(m.of(x), x % d) << x << " % " << d;
    }
  }
  for (int i = 0; i < 2'000; ++i) {  // random divisors of every width
    const uint64_t d = (rng() >> (i % 64)) | 1;
    const chime::ExactMod m(d);
    for (int j = 0; j < 200; ++j) {
      const uint64_t x = rng();
      ASSERT_EQ(m.of(x), x % d) << x << " % " << d;
    }
  }
}

TEST(ChimeUnit, DifferentialDefaultGeometry) {
  Fixture f;
  chime::Options o;
  o.hotspot_bytes = 1 << 20;
  auto t = CTree::create(f.c, o);
  auto h = t->handle(f.c);
  testing::differential_run(h, 30000, 5000, 11);
  EXPECT_GE(t->stats()["height"], 2);
}

TEST(ChimeUnit, DifferentialSmallLeavesManySplits) {
  Fixture f;
  auto t = CTree::create(f.c, small(16, 4));
  auto h = t->handle(f.c);
  testing::differential_run(h, 20000, 2500, 12);
  EXPECT_GT(t->stats()["height"], 2);
}

TEST(ChimeUnit, DifferentialWrapAroundAndTinyNeighborhood) {
  Fixture f;
  auto t = CTree::create(f.c, small(8, 2));
  auto h = t->handle(f.c);
  testing::differential_run(h, 15000, 1500, 13);
}

TEST(ChimeUnit, DifferentialAllTechniquesOff) {
  Fixture f;
  auto o = small(32, 8);
  o.hopscotch_leaf = false;
  o.vacancy_piggyback = false;
  o.metadata_replication = false;
  o.speculative_read = false;
  auto t = CTree::create(f.c, o);
  auto h = t->handle(f.c);
  testing::differential_run(h, 15000, 2000, 14);
}

TEST(ChimeUnit, DifferentialTinyCache) {
  Fixture f;
  auto o = small(16, 4);
  o.cache_bytes = 1500;
  auto t = CTree::create(f.c, o);
  auto h = t->handle(f.c);
  testing::differential_run(h, 15000, 2000, 15);
  EXPECT_LE(t->cache_bytes(), 1500u);
}

TEST(ChimeUnit, LargerValues) {
  Fixture f;
  auto o = small(32, 8);
  o.value_size = 20;
  auto t = CTree::create(f.c, o);
  auto h = t->handle(f.c);
  std::string v;
  for (Key k = 1; k < 3000; ++k) ASSERT_TRUE(h.insert(k * 77, std::string(20, char('a' + k % 26))));
  for (Key k = 1; k < 3000; ++k) {
    ASSERT_TRUE(h.search(k * 77, v));
    ASSERT_EQ(v, std::string(20, char('a' + k % 26)));
  }
  EXPECT_THROW(h.insert(5, std::string(21, 'x')), LimitError);
}

// Deleting a leaf's largest key keeps it as a tombstone, so inserts routed by max+1 still land
// in the right leaf; check that keys around deleted maxima stay reachable.
TEST(ChimeUnit, DeletingLeafMaximaKeepsRouting) {
  Fixture f;
  auto t = CTree::create(f.c, small(16, 4));
  auto h = t->handle(f.c);
  for (Key k = 0; k < 2000; ++k) ASSERT_TRUE(h.insert(k * 10, value_for(k * 10, 0, 0)));
  for (Key k = 0; k < 2000; k += 3) ASSERT_TRUE(h.remove(k * 10));
  for (Key k = 0; k < 2000; k += 3) ASSERT_TRUE(h.insert(k * 10 + 5, value_for(k * 10 + 5, 0, 0)));
  for (Key k = 0; k < 2000; k += 3) ASSERT_TRUE(h.insert(k * 10, value_for(k * 10, 0, 1)));
  std::string v;
  for (Key k = 0; k < 2000; ++k) {
    ASSERT_TRUE(h.search(k * 10, v)) << k;
    if (k % 3 == 0) {
      ASSERT_TRUE(h.search(k * 10 + 5, v));
    }
  }
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(0, 100000, rows);
  EXPECT_EQ(rows.size(), 2000u + 667u);
}

struct Warm {
  Fixture f;
  std::shared_ptr<CTree> t;
  std::unique_ptr<CTree::Handle> h;
  static constexpr size_t n = 20000;
  explicit Warm(chime::Options o) {
    t = CTree::create(f.c, o);
    h = std::make_unique<CTree::Handle>(t->handle(f.c));
    for (size_t i = 0; i < n; ++i)
      EXPECT_TRUE(h->insert(key_of_rank(i), value_for(key_of_rank(i), 0, 0)));
    std::string v;
    for (size_t i = 0; i < n; ++i) h->search(key_of_rank(i), v);  // warm the internal-node cache
  }
  template <class F>
  VerbCounters measure(F&& fn) {
    VerbCounters before = f.c.counters().total;
    fn();
    return f.c.counters().total - before;
  }
};

chime::Options no_spec() {
  chime::Options o;
  o.speculative_read = false;
  return o;
}

TEST(ChimeUnit, Table1RoundTripsWarmCache) {
  Warm w(no_spec());
  const size_t q = 1000;
  std::string v;
  auto d = w.measure([&] {
    for (size_t i = 0; i < q; ++i) ASSERT_TRUE(w.h->search(key_of_rank(i * 7 % w.n), v));
  });
  EXPECT_EQ(d.round_trips, q);
  std::printf("chime search: %.2f RTT, %.1f B read/op\n", double(d.round_trips) / q,
              double(d.bytes_read) / q);
  double chime_bytes = double(d.bytes_read) / q;

  d = w.measure([&] {
    for (size_t i = 0; i < q; ++i)
      ASSERT_TRUE(w.h->update(key_of_rank(i * 7 % w.n), value_for(key_of_rank(i * 7 % w.n), 0, 1)));
  });
  EXPECT_EQ(d.round_trips, 3 * q);
  std::printf("chime update: %.2f RTT, %.1f B read, %.1f B written/op\n", double(d.round_trips) / q,
              double(d.bytes_read) / q, double(d.bytes_written) / q);

  d = w.measure([&] {
    for (size_t i = 0; i < q; ++i) ASSERT_TRUE(w.h->remove(key_of_rank(i * 7 % w.n)));
  });
  EXPECT_EQ(d.round_trips, 3 * q);
  std::printf("chime delete: %.2f RTT/op\n", double(d.round_trips) / q);

  // Inserts of new keys: 3 round trips unless the op split a leaf or widened its hop range.
  size_t exact = 0, total_rtt = 0, nosplit = 0;
  for (size_t i = 0; i < q; ++i) {
    Key k = key_of_rank(w.n + i);
    double splits = w.t->stats()["splits"];
    auto di = w.measure([&] { ASSERT_TRUE(w.h->insert(k, value_for(k, 0, 0))); });
    if (w.t->stats()["splits"] != splits) continue;
    ++nosplit;
    total_rtt += di.round_trips;
    exact += di.round_trips == 3;
  }
  EXPECT_GT(exact, nosplit * 9 / 10);
  std::printf("chime insert (no split): %.3f RTT/op, %zu of %zu exactly 3\n",
              double(total_rtt) / nosplit, exact, nosplit);

  // Scan: one round trip per leaf.
  std::vector<std::pair<Key, std::string>> rows;
  d = w.measure([&] { w.h->scan(0, 100, rows); });
  size_t per_leaf =
      size_t(0.5 * w.t->geometry().span());  // leaves hold more than half after splits
  EXPECT_EQ(rows.size(), 100u);
  EXPECT_LE(d.round_trips, 100 / per_leaf + 1);
  std::printf("chime scan(100): %llu RTT\n", (unsigned long long)d.round_trips);

  // Bytes per search vs Sherman (whole 64-entry leaf) with 8-byte keys and values.
  Fixture sf;
  auto st = sherman::Tree<ShmTransport>::create(sf.c, {});
  EXPECT_LE(chime_bytes * 4, double(st->geometry().image_bytes()));
  std::printf("bytes/search: chime %.1f vs sherman %u\n", chime_bytes,
              st->geometry().image_bytes());
}

// §3.9: a scan reads the leaves the cached level-1 nodes name in parallel, one round trip for
// a YCSB E scan (100 rows, 64-entry leaves at least half full: up to 4 leaves), where the
// sequential scan pays one per leaf. Both return exactly the keys in order.
TEST(ChimeUnit, ScansReadTheirLeavesInParallel) {
  std::vector<Key> sorted;
  for (size_t i = 0; i < Warm::n; ++i) sorted.push_back(key_of_rank(i));
  std::sort(sorted.begin(), sorted.end());
  double rtt[2] = {0, 0}, bytes[2] = {0, 0};
  uint64_t worst[2] = {0, 0};
  const size_t scans = 300, count = 100;
  for (bool parallel : {true, false}) {
    chime::Options o = no_spec();
    ASSERT_TRUE(o.parallel_scan);  // the paper's scan is the default
    o.parallel_scan = parallel;
    Warm w(o);
    std::vector<std::pair<Key, std::string>> rows;
    for (size_t i = 0; i < scans; ++i) {
      const size_t start = (i * 7919) % (sorted.size() - count);
      // Half the scans start between two keys.
      const Key from = sorted[start] - (i % 2);
      auto d = w.measure([&] { w.h->scan(from, count, rows); });
      ASSERT_EQ(rows.size(), count);
      for (size_t r = 0; r < count; ++r) ASSERT_EQ(rows[r].first, sorted[start + r]) << from;
      rtt[parallel] += double(d.round_trips) / scans;
      bytes[parallel] += double(d.bytes_read) / scans;
      worst[parallel] = std::max<uint64_t>(worst[parallel], d.round_trips);
    }
  }
  std::printf(
      "chime scan(%zu): parallel %.2f RTT (worst %llu), %.0f B; sequential %.2f RTT "
      "(worst %llu), %.0f B\n",
      count, rtt[1], (unsigned long long)worst[1], bytes[1], rtt[0], (unsigned long long)worst[0],
      bytes[0]);
  EXPECT_LE(rtt[1], 1.1);
  EXPECT_LE(worst[1], 2u);
  EXPECT_GE(rtt[0], 2.0);
  EXPECT_GE(rtt[0], 2 * rtt[1]);
}

// A scan READ racing a hop-range WRITE may see any mix of old and new entries (each entry is
// sealed, so entries are the unit of tearing). Every mix the whole-leaf checks accept must hold
// exactly the keys before or after the insert; a hop that hides or duplicates a key is rejected.
TEST(ChimeUnit, TornHopRangesAreRejectedByWholeLeafChecks) {
  size_t hops = 0, mixes = 0, rejected = 0;
  for (Key round = 0; round < 40; ++round) {  // one fresh single-leaf tree per round
    Fixture f;
    chime::Options o = small(64, 4);
    o.speculative_read = false;
    auto t = CTree::create(f.c, o);
    auto h = t->handle(f.c);
    const chime::Geometry& g = t->geometry();
    GlobalAddress slot = layout::root_slot(f.c.memory_nodes().front(), o.root_slot);
    auto snapshot = [&] {
      auto rw = btree::RootWord::from_raw(f.c.read_value<uint64_t>(slot));
      std::vector<uint64_t> w(g.node_words() + 1);
      f.c.read(rw.addr, w.data(), static_cast<uint32_t>(w.size() * 8));
      return w;
    };
    auto keys_of = [&](const chime::LeafImage<>& img) {
      std::vector<Key> ks;
      for (uint32_t i = 0; i < g.span(); ++i)
        if (img.occupied(i)) ks.push_back(img.key(i));
      std::sort(ks.begin(), ks.end());
      return ks;
    };
    for (Key k = round << 32;; ++k) {
      std::vector<uint64_t> before = snapshot();
      ASSERT_TRUE(h.insert(k, value_for(k, 0, 0)));
      if (t->stats()["leaves"] != 1) break;  // split: the leaf was rewritten whole
      std::vector<uint64_t> after = snapshot();
      std::vector<uint32_t> changed;
      for (uint32_t i = 0; i < g.span(); ++i) {
        size_t w0 = g.entry_word(i);
        if (!std::equal(before.begin() + w0, before.begin() + w0 + g.ew(), after.begin() + w0))
          changed.push_back(i);
      }
      // Fewer than 3 entries: no key moved (new key + its home's bitmap); cap the enumeration.
      if (changed.size() < 3 || changed.size() > 14) continue;
      ++hops;
      chime::LeafImage<> mix(g);
      mix.w = before;
      auto old_keys = keys_of(mix);
      mix.w = after;
      auto new_keys = keys_of(mix);
      std::fill(mix.have_e.begin(), mix.have_e.end(), 1);
      std::fill(mix.have_r.begin(), mix.have_r.end(), 1);
      for (uint32_t m = 1; m + 1 < (1u << changed.size()); ++m) {
        mix.w = before;
        for (size_t b = 0; b < changed.size(); ++b)
          if (m >> b & 1) {
            size_t w0 = g.entry_word(changed[b]);
            std::copy(after.begin() + w0, after.begin() + w0 + g.ew(), mix.w.begin() + w0);
          }
        ++mixes;
        if (!(mix.consistent(nullptr) && mix.all_bitmaps_match())) {
          ++rejected;
          continue;
        }
        auto ks = keys_of(mix);
        ASSERT_TRUE(ks == old_keys || ks == new_keys) << "accepted a torn hop, mix " << m;
      }
    }
  }
  EXPECT_GE(hops, 20u);
  EXPECT_GT(rejected, mixes / 2);
  std::printf("torn hop mixes: %zu hops, %zu mixes, %zu rejected\n", hops, mixes, rejected);
}

TEST(ChimeUnit, SpeculativeReadHitsAndMisses) {
  chime::Options o;
  o.hotspot_bytes = 1 << 20;
  Warm w(o);  // warm-up searches filled the hotspot buffer
  std::string v;
  const size_t q = 500;
  auto d = w.measure([&] {
    for (size_t i = 0; i < q; ++i) ASSERT_TRUE(w.h->search(key_of_rank(i), v));
  });
  EXPECT_EQ(d.round_trips, q);  // hits: one small entry READ each
  EXPECT_LT(double(d.bytes_read) / q, 40.0);
  EXPECT_GE(w.t->stats()["speculative_hits"], 0.9 * q);  // a few slots lost to bucket collisions
  std::printf("chime speculative search: %.2f RTT, %.1f B read/op\n", double(d.round_trips) / q,
              double(d.bytes_read) / q);
  for (size_t i = 0; i < q; ++i) ASSERT_TRUE(w.h->remove(key_of_rank(i)));
  double misses = w.t->stats()["speculative_misses"];
  d = w.measure([&] {
    for (size_t i = 0; i < q; ++i) ASSERT_FALSE(w.h->search(key_of_rank(i), v));
  });
  misses = w.t->stats()["speculative_misses"] - misses;
  EXPECT_GE(misses, 0.9 * q);
  EXPECT_EQ(double(d.round_trips), q + misses);  // failed speculation costs one extra READ
  std::printf("chime search after failed speculation: %.2f RTT/op\n", double(d.round_trips) / q);
}

// The factor analysis (paper §5.3, Fig. 15) adds CHIME's techniques to Sherman one by one. Each
// step must cost what the paper's step costs: `none` is Sherman (search: 1 READ of the whole
// leaf; write: [lock + READ leaf] ; [WRITE + unlock]); hopscotch leaves read a neighborhood plus
// the leaf header (a second READ in the same round trip) and take the vacancy bitmap with a READ
// of its own once locked; piggybacking folds that READ into the lock's masked CAS (one round trip
// less per write, §4.2); replication folds the header READ into the neighborhood READ (one verb
// less); speculative reads fetch one entry on a hit.
struct StepCost {
  double search_rtt, search_verbs, search_bytes, update_rtt, update_verbs;
};

StepCost measure_step(const char* step) {
  const int n = std::string(step) == "none"          ? 0
                : std::string(step) == "hopscotch"   ? 1
                : std::string(step) == "vacancy"     ? 2
                : std::string(step) == "replication" ? 3
                                                     : 4;
  chime::Options o;
  o.hopscotch_leaf = n >= 1;
  o.vacancy_piggyback = n >= 2;
  o.metadata_replication = n >= 3;
  o.speculative_read = n >= 4;
  Warm w(o);
  const size_t q = 500;
  std::string v;
  auto d = w.measure([&] {
    for (size_t i = 0; i < q; ++i) EXPECT_TRUE(w.h->search(key_of_rank(i * 7 % w.n), v));
  });
  StepCost c;
  c.search_rtt = double(d.round_trips) / q;
  c.search_verbs = double(d.total_verbs()) / q;
  c.search_bytes = double(d.bytes_read) / q;
  d = w.measure([&] {
    for (size_t i = 0; i < q; ++i)
      EXPECT_TRUE(w.h->update(key_of_rank(i * 7 % w.n), value_for(key_of_rank(i), 0, 2)));
  });
  c.update_rtt = double(d.round_trips) / q;
  c.update_verbs = double(d.total_verbs()) / q;
  std::printf("chime factor %-11s search %.2f RTT %.2f verbs %7.1f B; update %.2f RTT %.2f verbs\n",
              step, c.search_rtt, c.search_verbs, c.search_bytes, c.update_rtt, c.update_verbs);
  return c;
}

TEST(ChimeUnit, FactorStepsCostWhatThePaperSays) {
  const StepCost none = measure_step("none"), hop = measure_step("hopscotch"),
                 vac = measure_step("vacancy"), rep = measure_step("replication"),
                 all = measure_step("all");
  Fixture sf;
  auto st = sherman::Tree<ShmTransport>::create(sf.c, {});
  // none = Sherman: 1 READ per search, 2 round trips per write.
  EXPECT_EQ(none.search_rtt, 1.0);
  EXPECT_EQ(none.search_verbs, 1.0);
  EXPECT_EQ(none.update_rtt, 2.0);
  EXPECT_EQ(none.update_verbs, 4.0);  // [CAS + READ leaf] ; [WRITE entry + WRITE lock word]
  // +hopscotch: a neighborhood and the header, one round trip (a neighborhood that wraps around
  // the leaf is two READs; one that starts at entry 0 covers the header); writes learn the bitmap
  // with a READ of their own: lock ; READ bitmap ; [READ range + READ header] ; [WRITE + WRITE].
  EXPECT_EQ(hop.search_rtt, 1.0);
  EXPECT_NEAR(hop.search_verbs, 2.0, 0.1);
  EXPECT_LE(hop.search_bytes * 4, none.search_bytes);
  EXPECT_EQ(hop.update_rtt, 4.0);
  EXPECT_NEAR(hop.update_verbs, 6.0, 0.1);
  // +vacancy: the bitmap rides on the lock's masked CAS: one round trip and one READ less.
  EXPECT_EQ(vac.search_rtt, 1.0);
  EXPECT_EQ(vac.search_verbs, hop.search_verbs);
  EXPECT_EQ(vac.search_bytes, hop.search_bytes);
  EXPECT_EQ(vac.update_rtt, 3.0);
  EXPECT_DOUBLE_EQ(vac.update_verbs, hop.update_verbs - 1.0);
  // +replication: the header comes with the neighborhood: one READ less (the rest are wrapping
  // neighborhoods, which take two READs in every step).
  EXPECT_EQ(rep.search_rtt, 1.0);
  EXPECT_NEAR(rep.search_verbs, 1.0, 0.15);
  EXPECT_NEAR(vac.search_verbs - rep.search_verbs, 0.9, 0.1);
  EXPECT_EQ(rep.update_rtt, 3.0);
  EXPECT_NEAR(vac.update_verbs - rep.update_verbs, 0.9, 0.1);
  EXPECT_LE(rep.search_bytes, vac.search_bytes);
  // +speculative read: hot entries are fetched alone (the warm-up made every key hot).
  EXPECT_LE(all.search_rtt, 1.0 + 0.05);
  EXPECT_LT(all.search_bytes * 2, rep.search_bytes);
  EXPECT_EQ(all.update_rtt, 3.0);
}

TEST(ChimeUnit, SmallerCacheRaisesRoundTripsAndRespectsBudget) {
  double rtt[2];
  uint64_t budgets[2] = {uint64_t{64} << 20, 3000};
  for (int b = 0; b < 2; ++b) {
    auto o = no_spec();
    o.cache_bytes = budgets[b];
    Warm w(o);
    EXPECT_LE(w.t->cache_bytes(), budgets[b]);
    std::string v;
    auto d = w.measure([&] {
      for (size_t i = 0; i < 1000; ++i) w.h->search(key_of_rank(i * 13 % w.n), v);
    });
    rtt[b] = double(d.round_trips) / 1000;
  }
  EXPECT_EQ(rtt[0], 1.0);
  EXPECT_GT(rtt[1], 1.05);
  std::printf("chime search RTT: big cache %.2f, 3 KB cache %.2f\n", rtt[0], rtt[1]);
}

}  // namespace
}  // namespace dmrt
