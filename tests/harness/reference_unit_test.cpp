// The generic suites on the reference index, single client: differential against std::map, and
// the zipfian generator's shape.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "tests/harness/kv_suites.h"
#include "tests/harness/reference_index.h"
#include "tests/runtime/test_cluster.h"

namespace dmrt::harness {
namespace {

TEST(HarnessZipf, SkewMatchesTheory) {
  bench::Zipfian z(1000, 0.99);
  std::mt19937_64 rng(7);
  std::vector<uint64_t> hits(1000);
  constexpr int kDraws = 400000;
  for (int i = 0; i < kDraws; ++i) {
    uint64_t r = z(rng);
    ASSERT_LT(r, 1000u);
    ++hits[r];
  }
  double zeta = 0;
  for (int i = 1; i <= 1000; ++i) zeta += 1.0 / std::pow(i, 0.99);
  for (int r : {0, 1, 9}) {
    double expect = kDraws / std::pow(r + 1, 0.99) / zeta;
    EXPECT_NEAR(hits[r], expect, expect * 0.1) << "rank " << r;
  }
  EXPECT_GT(hits[0], hits[10] * 5);
  bench::Zipfian u(10, 0.0);
  for (int i = 0; i < 100; ++i) EXPECT_LT(u(rng), 10u);
}

TEST(HarnessReference, DifferentialAgainstStdMap) {
  auto pool = testing::small_pool(1, 1);
  auto c = testing::make_client(pool, 0);
  for (uint64_t seed : {1, 2, 3}) {  // each run starts from an empty index
    auto idx = ReferenceIndex<ShmTransport>::create(c, 512);
    differential_test([&] { return idx->handle(c); }, 20000, seed);
  }
}

TEST(HarnessReference, DifferentialWithLongValues) {
  auto pool = testing::small_pool(1, 1);
  auto c = testing::make_client(pool, 0);
  auto idx = ReferenceIndex<ShmTransport>::create(c, 64);
  DifferentialOptions o;
  o.keys = 64;
  o.min_value = 50;
  o.max_value = 2000;
  differential_test(
      [&] { return std::make_unique<ReferenceIndex<ShmTransport>::Handle>(idx->handle(c)); }, 5000,
      9, o);
}

// The suite must be able to fail: a stale search cache disagrees with the model.
std::shared_ptr<ReferenceIndex<ShmTransport>> g_faulty;
ShmClient* g_client = nullptr;

TEST(HarnessReference, DifferentialCatchesAStaleCache) {
  auto pool = testing::small_pool(1, 1);
  auto c = testing::make_client(pool, 0);
  g_faulty = ReferenceIndex<ShmTransport>::create(c, 64, ReferenceFaults{.stale_search = true});
  g_client = &c;
  EXPECT_FATAL_FAILURE(differential_test([] { return g_faulty->handle(*g_client); }, 5000, 1,
                                         DifferentialOptions{.keys = 64}),
                       "");
  g_faulty.reset();
  g_client = nullptr;
}

TEST(HarnessReference, KeysBeyondCapacityAreRejected) {
  auto pool = testing::small_pool(1, 1);
  auto c = testing::make_client(pool, 0);
  auto idx = ReferenceIndex<ShmTransport>::create(c, 16);
  auto h = idx->handle(c);
  EXPECT_THROW(h.insert(16, "x"), std::out_of_range);
}

}  // namespace
}  // namespace dmrt::harness
