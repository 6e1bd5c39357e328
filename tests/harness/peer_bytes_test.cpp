// The byte-key suites (tests/harness/bytes_suites.h) on dmrt-bench's four local peers
// (bench/peers/*.h) at key_size 8, 32 and 256, and a concurrent stress on the ordered ones.
#include <gtest/gtest.h>

#include "bench/peers/absl_hash.h"
#include "bench/peers/ordered_map.h"
#include "bench/peers/tbb_hash.h"
#include "bench/peers/tbb_map.h"
#include "tests/harness/bytes_suites.h"
#include "tests/runtime/test_cluster.h"

namespace dmrt::harness {
namespace {

bench::IndexOptions peer_options(size_t key_size) {
  bench::IndexOptions io;
  io.key_size = static_cast<uint32_t>(key_size);
  io.expected_keys = 1000;
  return io;
}

template <class I, class H>
void peer_suites() {
  for (size_t key_size : {size_t{8}, size_t{32}, size_t{256}}) {
    BytesSuiteOptions o;
    o.ops = 6000;
    o.seed = key_size;
    byte_key_suites(
        [&] {
          auto idx = std::make_shared<I>(peer_options(key_size));
          return keep(idx, H(*idx));
        },
        key_size, o);
  }
}

TEST(HarnessPeerBytes, TbbHash) {
  peer_suites<bench::TbbHashIndex, bench::TbbHashHandle>();
}
TEST(HarnessPeerBytes, AbslHash) {
  peer_suites<bench::AbslHashIndex, bench::AbslHashHandle>();
}
TEST(HarnessPeerBytes, OrderedMap) {
  peer_suites<bench::OrderedMapIndex, bench::OrderedMapHandle>();
}
TEST(HarnessPeerBytes, TbbMap) {
  peer_suites<bench::TbbMapIndex, bench::TbbMapHandle>();
}

// At key_size 8 a peer's integer and 8-byte keys are one key; above 8, k is key_bytes(k).
TEST(HarnessPeerBytes, IntegerAndByteKeysAreTheSameKey) {
  for (size_t key_size : {size_t{8}, size_t{32}}) {
    bench::OrderedMapIndex idx(peer_options(key_size));
    bench::OrderedMapHandle h(idx);
    ASSERT_TRUE(h.insert(Key{0x0102030405060708}, "int"));
    std::string out;
    ASSERT_TRUE(h.search(key_bytes(0x0102030405060708), out));
    EXPECT_EQ(out, "int");
    ASSERT_TRUE(h.insert(key_bytes(7), "bytes"));
    ASSERT_TRUE(h.search(Key{7}, out));
    EXPECT_EQ(out, "bytes");
    std::vector<std::pair<Key, std::string>> rows;
    h.scan(Key{0}, 10, rows);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].first, 7u);
    EXPECT_EQ(rows[1].first, 0x0102030405060708u);
  }
}

template <class I, class H>
void peer_stress(size_t key_size) {
  auto pool = testing::small_pool(1, 1, uint64_t{64} << 20);
  auto idx = std::make_shared<I>(peer_options(key_size));
  StressOptions o;
  o.keys = 200;
  o.threads = 2;
  o.fibers = 4;
  o.ops_per_worker = 1500;
  o.seed = key_size + 1;
  auto out = byte_key_stress_test(
      pool, [&](ShmClient&) { return H(*idx); }, key_size, o);
  EXPECT_GT(out.result.scans_checked, 0u);
}

TEST(HarnessPeerBytes, OrderedPeersAreLinearizableWithByteKeys) {
  peer_stress<bench::OrderedMapIndex, bench::OrderedMapHandle>(32);
  peer_stress<bench::TbbMapIndex, bench::TbbMapHandle>(256);
}

}  // namespace
}  // namespace dmrt::harness
