// Sherman, single client: std::map differential runs and deterministic round-trip/byte figures.
#include <gtest/gtest.h>

#include "../runtime/test_cluster.h"
#include "indexes/sherman/prebuilt.h"
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
