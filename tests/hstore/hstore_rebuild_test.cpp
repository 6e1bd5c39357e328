// HStore rebuild time at paper scale (Fig. 11a's smallest point, 1 million keys): prints the SLS
// and HTS rebuild times; checks contents, never asserts wall-clock. HSTORE_REBUILD_KEYS overrides.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "hstore_test_util.h"

namespace dmrt {
namespace {

using testing::HStoreCluster;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

TEST(HStoreRebuild, OneMillionKeys) {
  size_t n = testing::kSanitized ? 50'000 : 1'000'000;
  if (const char* e = std::getenv("HSTORE_REBUILD_KEYS")) n = std::strtoull(e, nullptr, 10);
  std::vector<Key> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = (i + 1) * 2654435761ull;  // distinct, scattered
  hstore::Options o;
  o.expected_keys = n;
  auto value = [](Key k) {
    return std::string(reinterpret_cast<const char*>(&k), 8);
  };  // YCSB-like 8 B
  auto t0 = std::chrono::steady_clock::now();
  HStoreCluster cl(o, 2, 1, uint64_t{512} << 20, keys, value);
  double start_ms = ms_since(t0);
  auto s = cl.index->stats(cl.setup);
  std::printf(
      "[ rebuild ] %zu keys: bulk load + start %.0f ms (SLS built from the table in %.1f ms)\n", n,
      start_ms, s["sls_rebuild_ms"]);

  // SLS lost: rebuilt from the HTS's addresses and the keys read from the pool.
  cl.servers->fail_sls(cl.setup);
  t0 = std::chrono::steady_clock::now();
  cl.servers->rebuild_sls();
  ASSERT_TRUE(cl.servers->wait_serving(cl.setup, 600'000'000'000ull));
  double sls_wall = ms_since(t0);
  s = cl.index->stats(cl.setup);
  ASSERT_EQ(s["sls_rebuild_keys"], double(n));
  std::printf("[ rebuild ] SLS: %.1f ms in the server (%.1f ms until serving), %zu keys\n",
              s["sls_rebuild_ms"], sls_wall, n);

  // HTS lost: rebuilt by scanning the skiplist, no pool access.
  cl.servers->fail_hts(cl.setup);
  t0 = std::chrono::steady_clock::now();
  cl.servers->rebuild_hts();
  ASSERT_TRUE(cl.servers->wait_serving(cl.setup, 600'000'000'000ull));
  double hts_wall = ms_since(t0);
  s = cl.index->stats(cl.setup);
  ASSERT_EQ(s["hts_rebuild_keys"], double(n));
  std::printf(
      "[ rebuild ] HTS: %.1f ms in the server (%.1f ms until serving), %zu keys, %.0f overflow "
      "buckets\n",
      s["hts_rebuild_ms"], hts_wall, n, s["overflow_buckets"]);

  auto c = cl.client(1);
  auto h = cl.index->handle(c);
  std::mt19937_64 rng(5);
  std::string out;
  for (int i = 0; i < 20000; ++i) {
    Key k = keys[rng() % n];
    ASSERT_TRUE(h.search(k, out));
    ASSERT_EQ(out, value(k));
  }
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(0, 100, rows);
  ASSERT_EQ(rows.size(), std::min<size_t>(100, n));
  EXPECT_EQ(rows[0].first, keys[0]);
}

}  // namespace
}  // namespace dmrt
