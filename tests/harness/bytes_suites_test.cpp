// The byte-key suites (tests/harness/bytes_suites.h) on the reference bytes index, single client:
// edge cases and the differential run at key_size 32 and 256, and proofs that they can fail.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "tests/harness/bytes_suites.h"
#include "tests/harness/reference_bytes_index.h"
#include "tests/runtime/test_cluster.h"
#if DMRT_TRANSPORT_SIM
#include "tests/sim/small_cluster.h"
#endif

namespace dmrt::harness {
namespace {

using RefBytes = ReferenceBytesIndex<ShmTransport>;

TEST(HarnessBytes, ReferencePassesTheSuites) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto c = testing::make_client(pool, 0);
  for (size_t key_size : {size_t{32}, size_t{256}}) {
    BytesSuiteOptions o;
    o.ops = 8000;
    o.seed = key_size;
    byte_key_suites(
        [&] {
          auto idx = RefBytes::create(c, 4096, key_size);
          return keep(idx, idx->handle(c));
        },
        key_size, o);
  }
}

#if DMRT_TRANSPORT_SIM
// The same suites over a sim client (untimed, no simulation running): the form an index's sim
// instantiation takes (the top of tests/harness/bytes_suites.h).
TEST(HarnessBytes, ReferencePassesTheSuitesOnSim) {
  sim::Cluster cluster{sim::small_test_cluster(1, 1)};
  sim::SimClient c = sim::untimed_setup_client(cluster);
  byte_key_suites(
      [&] {
        auto idx = ReferenceBytesIndex<SimTransport>::create(c, 4096, 32);
        return keep(idx, idx->handle(c));
      },
      32, {.ops = 4000});
}
#endif

TEST(HarnessBytes, KeyPoolCoversTheOrderCases) {
  const auto keys = byte_key_pool(32, 400, 3);
  EXPECT_GE(keys.size(), 400u);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  size_t prefixes = 0, zero = 0, ff = 0, lengths[33] = {};
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_GE(keys[i].size(), 1u);
    ASSERT_LE(keys[i].size(), 32u);
    ++lengths[keys[i].size()];
    zero += keys[i].find('\x00') != std::string::npos;
    ff += keys[i].find('\xff') != std::string::npos;
    if (i + 1 < keys.size() && keys[i + 1].starts_with(keys[i])) ++prefixes;
  }
  for (size_t len = 1; len <= 32; ++len) EXPECT_GT(lengths[len], 0u) << "length " << len;
  EXPECT_GT(prefixes, 30u);
  EXPECT_GT(zero, 10u);
  EXPECT_GT(ff, 10u);
  for (const auto& k : byte_key_pool(8, 100, 3)) EXPECT_EQ(k.size(), 8u);
}

// A handle that keeps only the first 20 bytes of each key (an index that truncates): keys
// sharing 20 bytes collide, which the suites must notice.
struct TruncatingHandle {
  RefBytes::Handle h;
  static std::string_view cut(std::string_view k) { return k.substr(0, 20); }
  bool search(std::string_view k, std::string& out) { return h.search(cut(k), out); }
  bool insert(std::string_view k, std::string_view v) { return h.insert(cut(k), v); }
  bool update(std::string_view k, std::string_view v) { return h.update(cut(k), v); }
  bool remove(std::string_view k) { return h.remove(cut(k)); }
};
// The failures f() reports, intercepted (f's test does not fail for them).
template <class F>
std::vector<std::string> failures_of(F&& f) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    f();
  }
  std::vector<std::string> out;
  for (int i = 0; i < results.size(); ++i) out.emplace_back(results.GetTestPartResult(i).message());
  return out;
}

TEST(HarnessBytes, SuitesCatchATruncatingIndex) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto c = testing::make_client(pool, 0);
  auto make = [&] {
    auto idx = RefBytes::create(c, 4096, 32);
    return keep(idx, TruncatingHandle{idx->handle(c)});
  };
  EXPECT_FALSE(failures_of([&] { byte_key_edge_cases(make, 32, BytesSuiteOptions{}); }).empty());
  EXPECT_FALSE(failures_of([&] {
                 byte_key_differential(make, 32, BytesSuiteOptions{.ops = 4000});
               }).empty());
}

// A handle that takes over-long keys (no LimitError) fails the edge cases.
struct LaxHandle {
  std::map<std::string, std::string, std::less<>> m;
  bool search(std::string_view k, std::string& out) {
    auto it = m.find(k);
    if (it == m.end()) return false;
    out = it->second;
    return true;
  }
  bool insert(std::string_view k, std::string_view v) {
    return m.emplace(std::string(k), std::string(v)).second;
  }
  bool update(std::string_view k, std::string_view v) {
    auto it = m.find(k);
    if (it == m.end()) return false;
    it->second.assign(v);
    return true;
  }
  bool remove(std::string_view k) {
    auto it = m.find(k);
    if (it == m.end()) return false;
    m.erase(it);
    return true;
  }
};

TEST(HarnessBytes, EdgeCasesCatchAnIndexThatTakesOverLongKeys) {
  const auto failures =
      failures_of([] { byte_key_edge_cases([] { return LaxHandle{}; }, 32, BytesSuiteOptions{}); });
  ASSERT_FALSE(failures.empty());
  for (const auto& f : failures) EXPECT_NE(f.find("LimitError"), std::string::npos) << f;
}

}  // namespace
}  // namespace dmrt::harness
