// linprobe with one client: each operation's semantics and edge cases (value lengths, extreme
// keys, a full window, a fingerprint collision, attach and bad options), random operations against
// std::map, and the exact round trips and bytes of each operation on sim.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>
#include <unordered_map>

#include "linprobe_test_util.h"
#include "tests/harness/kv_suites.h"
#if DMRT_TRANSPORT_SIM
#include "tests/sim/small_cluster.h"
#endif

namespace dmrt::linprobe {
namespace {

using testing::ShmTable;

TEST(LinprobeUnit, EachOperationKeepsTheContract) {
  auto p = testing::pool();
  auto c = testing::client(p, 0);
  auto t = ShmTable::create(c, testing::small());
  auto h = t->handle(c);
  std::string out = "garbage";
  EXPECT_FALSE(h.search(7, out));
  EXPECT_FALSE(h.update(7, "x"));
  EXPECT_FALSE(h.remove(7));
  EXPECT_TRUE(h.insert(7, "seven"));
  EXPECT_FALSE(h.insert(7, "other"));  // insert-if-absent: the first value stays
  ASSERT_TRUE(h.search(7, out));
  EXPECT_EQ(out, "seven");
  EXPECT_TRUE(h.update(7, "SEVEN"));
  ASSERT_TRUE(h.search(7, out));
  EXPECT_EQ(out, "SEVEN");
  EXPECT_TRUE(h.remove(7));
  EXPECT_FALSE(h.remove(7));
  EXPECT_FALSE(h.search(7, out));
  EXPECT_TRUE(h.insert(7, "again"));
  ASSERT_TRUE(h.search(7, out));
  EXPECT_EQ(out, "again");
  EXPECT_EQ(t->stats(c).at("items"), 1.0);
  EXPECT_EQ(t->stats(c).at("locks_held"), 0.0);
}

TEST(LinprobeUnit, ValuesKeepTheirLengthAndBytes) {
  auto p = testing::pool();
  auto c = testing::client(p, 0);
  auto t = ShmTable::create(c, testing::small(256, 4, 20));
  auto h = t->handle(c);
  const std::string empty, one = "a", full(20, 'z'), binary("\0\xff\0b", 4);
  std::string out;
  for (Key k = 0; k < 4; ++k) {
    const std::string& v = k == 0 ? empty : k == 1 ? one : k == 2 ? full : binary;
    ASSERT_TRUE(h.insert(k, v));
    ASSERT_TRUE(h.search(k, out));
    EXPECT_EQ(out, v) << "key " << k;  // not padded to value_size
  }
  // One byte too long: refused before anything is written, for insert and update alike.
  EXPECT_THROW(h.insert(9, std::string(21, 'x')), LimitError);
  EXPECT_FALSE(h.search(9, out));
  EXPECT_THROW(h.update(2, std::string(21, 'x')), LimitError);
  ASSERT_TRUE(h.search(2, out));
  EXPECT_EQ(out, full);
}

TEST(LinprobeUnit, ExtremeKeys) {
  auto p = testing::pool();
  auto c = testing::client(p, 0);
  auto t = ShmTable::create(c, testing::small());
  auto h = t->handle(c);
  const Key keys[] = {0, 1, std::numeric_limits<Key>::max(), Key{1} << 63, 0x5555555555555555};
  for (Key k : keys) ASSERT_TRUE(h.insert(k, std::to_string(k)));
  std::string out;
  for (Key k : keys) {
    ASSERT_TRUE(h.search(k, out));
    EXPECT_EQ(out, std::to_string(k));
  }
}

// One bucket, window 1: seven slots. The eighth key is refused with LimitError (nothing stored,
// no lock left held); an insert of a present key still answers false; a remove makes room.
TEST(LinprobeUnit, AFullWindowIsRefusedAndNothingIsStored) {
  auto p = testing::pool();
  auto c = testing::client(p, 0);
  auto t = ShmTable::create(c, testing::small(1, 1));
  auto h = t->handle(c);
  for (Key k = 1; k <= 7; ++k) ASSERT_TRUE(h.insert(k, "v"));
  EXPECT_THROW(h.insert(8, "v"), LimitError);
  std::string out;
  EXPECT_FALSE(h.search(8, out));
  EXPECT_FALSE(h.insert(3, "w"));
  auto s = t->stats(c);
  EXPECT_EQ(s.at("items"), 7.0);
  EXPECT_EQ(s.at("load_factor"), 1.0);
  EXPECT_EQ(s.at("locks_held"), 0.0);
  ASSERT_TRUE(h.remove(5));
  EXPECT_TRUE(h.insert(8, "v"));
  EXPECT_EQ(t->items(c).size(), 7u);
}

// How full a table of 1024 buckets gets before the first refused insert (the same keys every
// run): the sizing rule (expected_keys at a quarter load) leaves a margin.
TEST(LinprobeUnit, LoadFactorAtTheFirstFullWindow) {
  for (uint32_t window : {1u, 2u, 4u}) {
    auto p = testing::pool();
    auto c = testing::client(p, 0);
    auto t = ShmTable::create(c, testing::small(1024, window, 8));
    auto h = t->handle(c);
    Key k = 0;
    try {
      for (;; ++k) h.insert(mix64(k + 1), "v");
    } catch (const LimitError&) {
    }
    const double lf = t->stats(c).at("load_factor");
    std::printf("[ linprobe ] window %u: first full window at load factor %.3f (%llu keys)\n",
                window, lf, static_cast<unsigned long long>(k));
    EXPECT_GT(lf, window == 4 ? 0.5 : 0.2);
  }
}

// Two keys with one home bucket and one fingerprint: each match costs its block's round trip,
// and the key in the block tells them apart.
TEST(LinprobeUnit, AFingerprintCollisionCostsOneRoundTripAndIsResolvedByTheKey) {
  std::unordered_map<uint64_t, Key> by_fp;
  Key k1 = 0, k2 = 0;
  for (Key k = 1; k2 == 0; ++k) {
    auto [it, fresh] = by_fp.emplace(KeyHash::of(k, 1).fp, k);
    if (!fresh) {
      k1 = it->second;
      k2 = k;
    }
  }
  auto p = testing::pool();
  auto c = testing::client(p, 0);
  auto t = ShmTable::create(c, testing::small(1, 1));
  auto h = t->handle(c);
  auto trips = [&](auto&& op) {
    const uint64_t before = c.counters().total.round_trips;
    op();
    return c.counters().total.round_trips - before;
  };
  std::string out;
  ASSERT_TRUE(h.insert(k1, "one"));
  EXPECT_EQ(trips([&] { EXPECT_FALSE(h.search(k2, out)); }), 2u);  // window + k1's block
  EXPECT_EQ(trips([&] { EXPECT_TRUE(h.insert(k2, "two")); }), 3u);
  EXPECT_EQ(trips([&] { EXPECT_TRUE(h.search(k2, out)); }), 3u);  // k1's block, then k2's
  EXPECT_EQ(out, "two");
  EXPECT_EQ(trips([&] { EXPECT_TRUE(h.search(k1, out)); }), 2u);
  EXPECT_EQ(out, "one");
}

TEST(LinprobeUnit, DifferentialAgainstStdMap) {
  for (uint64_t seed : {21, 22}) {
    auto p = testing::pool();
    auto c = testing::client(p, 0);
    auto t = ShmTable::create(c, testing::small(256, 4, 128));
    harness::DifferentialOptions d;
    d.keys = 512;
    harness::differential_test([&] { return t->handle(c); }, 20000, seed, d);
    EXPECT_EQ(t->stats(c).at("locks_held"), 0.0);
  }
}

TEST(LinprobeUnit, AttachSharesTheTableAndRefusesOtherOptions) {
  auto p = testing::pool();
  auto c = testing::client(p, 0);
  EXPECT_THROW(ShmTable::attach(c, testing::small()), ConfigError);  // nothing created yet
  auto t = ShmTable::create(c, testing::small());
  ASSERT_TRUE(t->handle(c).insert(42, "answer"));
  auto c2 = testing::client(p, 1);
  auto a = ShmTable::attach(c2, testing::small());
  std::string out;
  ASSERT_TRUE(a->handle(c2).search(42, out));
  EXPECT_EQ(out, "answer");
  EXPECT_THROW(ShmTable::attach(c2, testing::small(512)), ConfigError);
  EXPECT_THROW(ShmTable::attach(c2, testing::small(256, 2)), ConfigError);
  EXPECT_THROW(ShmTable::attach(c2, testing::small(256, 4, 8)), ConfigError);
}

TEST(LinprobeUnit, BadOptionsAreRefusedAndExpectedKeysSizeTheTable) {
  auto p = testing::pool();
  auto c = testing::client(p, 0);
  EXPECT_THROW(ShmTable::create(c, testing::small(256, 0)), ConfigError);
  EXPECT_THROW(ShmTable::create(c, testing::small(256, kMaxWindow + 1)), ConfigError);
  EXPECT_THROW(ShmTable::create(c, testing::small(0)), ConfigError);
  EXPECT_THROW(ShmTable::create(c, testing::small(256, 4, kMaxValueBytes + 1)), ConfigError);
  Options o = testing::small(16);
  o.expected_keys = 7000;
  auto t = ShmTable::create(c, o);
  EXPECT_EQ(t->options().buckets, 7000u * 4 / 7 + 1);  // a quarter of the slots
  auto h = t->handle(c);
  for (Key k = 0; k < 7000; ++k) ASSERT_TRUE(h.insert(k, "v"));
  EXPECT_NEAR(t->stats(c).at("load_factor"), 0.25, 0.01);
}

#if DMRT_TRANSPORT_SIM
// --- exact cost per operation on sim -----------------------------------------------------------
struct OpCost {
  uint64_t rt = 0, rd = 0, wr = 0;
};
struct Costs {
  OpCost insert, hit, miss, update, remove;
};
constexpr uint64_t kCostOps = 100;

// One client, 100 of each operation on keys with no fingerprint match in their window (a table
// of 4096 buckets holding 100 keys), 8 B values: 32 B blocks.
Costs sim_costs() {
  sim::Cluster cluster(sim::small_test_cluster(1, 1));
  sim::SimClient setup = sim::untimed_setup_client(cluster);
  auto t = HashTable<SimTransport>::create(setup, testing::small(4096, 4, 8));
  Costs out;
  cluster.run([&](sim::SimClient& c, const sim::WorkerInfo&) {
    auto h = t->handle(c);
    auto each = [&](Key first, OpCost& cost, auto&& op) {
      for (Key k = first; k < first + kCostOps; ++k) {
        const VerbCounters before = c.counters().total;
        op(k);
        const VerbCounters d = c.counters().total - before;
        cost.rt += d.round_trips;
        cost.rd += d.bytes_read;
        cost.wr += d.bytes_written;
      }
    };
    std::string got;
    ASSERT_TRUE(h.insert(Key{1} << 40, "warm-up"));  // claims the allocator's chunk (its FAA)
    each(0, out.insert, [&](Key k) { ASSERT_TRUE(h.insert(k, "value-08")); });
    each(0, out.hit, [&](Key k) { ASSERT_TRUE(h.search(k, got)); });
    each(kCostOps, out.miss, [&](Key k) { ASSERT_FALSE(h.search(k, got)); });
    each(0, out.update, [&](Key k) { ASSERT_TRUE(h.update(k, "value-09")); });
    each(0, out.remove, [&](Key k) { ASSERT_TRUE(h.remove(k)); });
  });
  return out;
}

// From the layout: a window is 4 x 64 B; a block 8 + 8 + 8 + 8 = 32 B; a CAS counts 8 B each
// way; the lock's release is an 8 B WRITE; a found block is read with its 8 B slot again.
TEST(LinprobeSim, ExactRoundTripsAndBytesPerOperation) {
  const Costs k = sim_costs();
  auto expect = [](const char* name, const OpCost& c, uint64_t rt, uint64_t rd, uint64_t wr) {
    std::printf("[ linprobe ] sim %-6s %.2f round trips, %5.1f B read, %5.1f B written\n", name,
                double(c.rt) / kCostOps, double(c.rd) / kCostOps, double(c.wr) / kCostOps);
    EXPECT_EQ(c.rt, rt * kCostOps) << name;
    EXPECT_EQ(c.rd, rd * kCostOps) << name;
    EXPECT_EQ(c.wr, wr * kCostOps) << name;
  };
  expect("search", k.hit, 2, 256 + 32 + 8, 0);
  expect("miss", k.miss, 1, 256, 0);
  expect("insert", k.insert, 2, 8 + 256 + 8, 8 + 32 + 8 + 8);
  expect("update", k.update, 3, 256 + 32 + 8 + 8, 32 + 8);
  expect("remove", k.remove, 3, 256 + 32 + 8 + 8, 8);
}
#endif

}  // namespace
}  // namespace dmrt::linprobe
