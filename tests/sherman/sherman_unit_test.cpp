// Sherman, single client: std::map differential runs and deterministic round-trip/byte figures.
#include <gtest/gtest.h>

#include <boost/fiber/all.hpp>

#include "../runtime/test_cluster.h"
#include "dmrt/indexes/common/root_slots.h"
#include "dmrt/indexes/sherman/sherman.h"
#include "kv_checks.h"

namespace dmrt {
namespace {

using STree = sherman::Tree<ShmTransport>;

struct Fixture {
  std::shared_ptr<shm::Pool> pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  testing::ShmClient c = testing::make_client(pool, 0);
};

void load(STree::Handle& h, size_t n) {
  for (size_t i = 0; i < n; ++i)
    ASSERT_TRUE(
        h.insert(testing::key_of_rank(i), testing::value_for(testing::key_of_rank(i), 0, 0)));
}

TEST(ShermanUnit, DifferentialUnsorted) {
  Fixture f;
  sherman::Options o;
  o.leaf_span = 16;
  o.internal_span = 8;
  auto t = STree::create(f.c, o);
  auto h = t->handle(f.c);
  testing::differential_run(h, 20000, 3000, 7);
  EXPECT_GT(t->stats()["height"], 2);
}

TEST(ShermanUnit, DifferentialSortedNoLockTableNoCombining) {
  Fixture f;
  sherman::Options o;
  o.leaf_span = 12;
  o.internal_span = 6;
  o.sorted_leaves = true;
  o.local_lock_table = false;
  o.write_combining = false;
  auto t = STree::create(f.c, o);
  auto h = t->handle(f.c);
  testing::differential_run(h, 15000, 2000, 8);
}

TEST(ShermanUnit, DifferentialTinyCache) {
  Fixture f;
  sherman::Options o;
  o.leaf_span = 8;
  o.internal_span = 4;
  o.cache_bytes = 2000;
  auto t = STree::create(f.c, o);
  auto h = t->handle(f.c);
  testing::differential_run(h, 15000, 2000, 9);
  EXPECT_LE(t->cache_bytes(), 2000u);
}

TEST(ShermanUnit, AttachSeesTheTree) {
  Fixture f;
  auto t = STree::create(f.c, {});
  auto h = t->handle(f.c);
  load(h, 500);
  auto c2 = testing::make_client(f.pool, 1);
  auto t2 = STree::attach(c2, {});
  auto h2 = t2->handle(c2);
  std::string v;
  for (size_t i = 0; i < 500; ++i) ASSERT_TRUE(h2.search(testing::key_of_rank(i), v));
}

TEST(ShermanUnit, OversizedValueIsRejected) {
  Fixture f;
  auto t = STree::create(f.c, {});
  auto h = t->handle(f.c);
  EXPECT_THROW(h.insert(1, std::string(9, 'x')), LimitError);
}

// Warm cache: search = 1 round trip reading one whole leaf; insert/update/remove = 2
// (CAS+READ batch, then entry WRITE + unlock batch).
TEST(ShermanUnit, RoundTripsWithWarmCache) {
  Fixture f;
  auto t = STree::create(f.c, {});
  auto h = t->handle(f.c);
  const size_t n = 20000;
  load(h, n);
  std::string v;
  for (size_t i = 0; i < n; ++i) h.search(testing::key_of_rank(i), v);  // warm the cache
  const auto& g = t->geometry();
  VerbCounters before = f.c.counters().total;
  const size_t q = 1000;
  for (size_t i = 0; i < q; ++i) ASSERT_TRUE(h.search(testing::key_of_rank(i * 7 % n), v));
  VerbCounters d = f.c.counters().total - before;
  EXPECT_EQ(d.round_trips, q);
  EXPECT_EQ(d.bytes_read, q * g.image_bytes());
  std::printf("sherman search: %.2f RTT, %.0f B read/op (leaf image %u B)\n",
              double(d.round_trips) / q, double(d.bytes_read) / q, g.image_bytes());

  before = f.c.counters().total;
  for (size_t i = 0; i < q; ++i)
    ASSERT_TRUE(h.update(testing::key_of_rank(i * 7 % n),
                         testing::value_for(testing::key_of_rank(i * 7 % n), 0, 1)));
  d = f.c.counters().total - before;
  EXPECT_EQ(d.round_trips, 2 * q);
  std::printf("sherman update: %.2f RTT, %.0f B read, %.0f B written/op\n",
              double(d.round_trips) / q, double(d.bytes_read) / q, double(d.bytes_written) / q);

  before = f.c.counters().total;
  for (size_t i = 0; i < q; ++i) ASSERT_TRUE(h.remove(testing::key_of_rank(i * 7 % n)));
  d = f.c.counters().total - before;
  EXPECT_EQ(d.round_trips, 2 * q);
  before = f.c.counters().total;
  for (size_t i = 0; i < q; ++i) ASSERT_TRUE(h.insert(testing::key_of_rank(i * 7 % n), "abcdefgh"));
  d = f.c.counters().total - before;  // slots freed by the removes: no splits
  EXPECT_EQ(d.round_trips, 2 * q);
  std::printf("sherman insert: %.2f RTT/op\n", double(d.round_trips) / q);
}

// on_chip_locks: leaf lock words live in each memory node's device memory (a table published in
// its locks root slot), not in the leaf. Shown by holding every word of the table from outside:
// an update then waits, and goes through once the words are free; with the option off the same
// table does not stop it. Round trips, verbs and bytes are the same either way.
TEST(ShermanUnit, OnChipLockWordsLiveInDeviceMemory) {
  VerbCounters cost[2];
  for (bool on_chip : {true, false}) {
    SCOPED_TRACE(on_chip ? "on-chip locks" : "locks in the leaves");
    Fixture f;
    sherman::Options o;
    o.on_chip_locks = on_chip;
    o.on_chip_lock_words = 1024;
    auto t = STree::create(f.c, o);
    auto h = t->handle(f.c);
    load(h, 2000);
    const uint64_t slot = f.c.read_value<uint64_t>(layout::root_slot(0, root_slots::kShermanLocks));
    GlobalAddress table =
        on_chip ? GlobalAddress::from_raw(slot) : f.c.alloc_device_memory(0, 8192);
    EXPECT_EQ(slot != 0, on_chip);
    ASSERT_TRUE(table.in_device_memory());
    EXPECT_EQ(t->lock_word(GlobalAddress(0, 4096)).in_device_memory(), on_chip);
    if (on_chip) {
      EXPECT_GE(t->lock_word(GlobalAddress(0, 4096)), table);
      EXPECT_LT(t->lock_word(GlobalAddress(0, 4096)), table + 8 * 1024);
    }
    // Another compute node holds every word of the table.
    std::vector<uint64_t> words(1024, 0xdead);
    f.c.write(table, words.data(), 1024 * 8);
    auto c2 = testing::make_client(f.pool, 1);
    const Key k = testing::key_of_rank(7);
    bool done = false;
    boost::fibers::fiber writer([&] {
      auto h2 = t->handle(c2);
      EXPECT_TRUE(h2.update(k, testing::value_for(k, 1, 1)));
      done = true;
    });
    for (int i = 0; i < 200 && !done; ++i) boost::this_fiber::yield();
    EXPECT_EQ(done, !on_chip);
    std::fill(words.begin(), words.end(), 0);
    f.c.write(table, words.data(), 1024 * 8);  // released
    writer.join();
    EXPECT_TRUE(done);
    std::string v;
    ASSERT_TRUE(h.search(k, v));
    EXPECT_EQ(v, testing::value_for(k, 1, 1));
    // An update's cost with a warm cache.
    for (size_t i = 0; i < 2000; ++i) h.search(testing::key_of_rank(i), v);
    VerbCounters before = f.c.counters().total;
    for (size_t i = 0; i < 200; ++i)
      ASSERT_TRUE(h.update(testing::key_of_rank(i * 7 % 2000), testing::value_for(i, 2, 2)));
    cost[on_chip ? 0 : 1] = f.c.counters().total - before;
  }
  EXPECT_EQ(cost[0].round_trips, 400u);
  EXPECT_EQ(cost[0].round_trips, cost[1].round_trips);
  EXPECT_EQ(cost[0].verbs, cost[1].verbs);
  EXPECT_EQ(cost[0].bytes_read, cost[1].bytes_read);
  EXPECT_EQ(cost[0].bytes_written, cost[1].bytes_written);
}

TEST(ShermanUnit, OnChipLockTablesAreFoundByAttachAndMustFit) {
  Fixture f;
  sherman::Options o;
  auto t = STree::create(f.c, o);
  auto h = t->handle(f.c);
  load(h, 100);
  auto c2 = testing::make_client(f.pool, 1);
  auto t2 = STree::attach(c2, o);
  EXPECT_EQ(t2->lock_word(GlobalAddress(0, 8192)), t->lock_word(GlobalAddress(0, 8192)));
  // The default table fills the memory node's default device memory: a second one does not fit.
  sherman::Options other = o;
  other.root_slot = 40;
  other.locks_root_slot = 41;
  EXPECT_THROW(STree::create(f.c, other), PoolExhausted);
  // A tree made without on-chip locks cannot be attached with them.
  other.on_chip_locks = false;
  other.locks_root_slot = 42;
  STree::create(f.c, other);
  other.on_chip_locks = true;
  EXPECT_THROW(STree::attach(c2, other), ConfigError);
}

TEST(ShermanUnit, SmallerCacheRaisesRoundTripsAndRespectsBudget) {
  double rtt[2];
  uint64_t budgets[2] = {uint64_t{64} << 20, 4096};
  for (int b = 0; b < 2; ++b) {
    Fixture f;
    sherman::Options o;
    o.cache_bytes = budgets[b];
    auto t = STree::create(f.c, o);
    auto h = t->handle(f.c);
    const size_t n = 20000;
    load(h, n);
    std::string v;
    for (size_t i = 0; i < n; ++i) h.search(testing::key_of_rank(i), v);
    EXPECT_LE(t->cache_bytes(), budgets[b]);
    VerbCounters before = f.c.counters().total;
    for (size_t i = 0; i < 1000; ++i) h.search(testing::key_of_rank(i * 13 % n), v);
    rtt[b] = double((f.c.counters().total - before).round_trips) / 1000;
  }
  EXPECT_EQ(rtt[0], 1.0);
  EXPECT_GT(rtt[1], 1.05);
}

}  // namespace
}  // namespace dmrt
