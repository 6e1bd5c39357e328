#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <vector>

#include "../common/lock_release.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "test_cluster.h"

namespace dmrt {
namespace {

using testing::make_client;
using testing::small_pool;

class Verbs : public ::testing::Test {
 protected:
  std::shared_ptr<shm::Pool> pool = small_pool(2, 1);
  testing::ShmClient c = make_client(pool, 0);
};

TEST_F(Verbs, WriteThenReadRoundTrips) {
  GlobalAddress a = c.alloc(256);
  std::vector<uint8_t> in(256), out(256);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7 + 1);
  c.write(a, in.data(), 256);
  c.read(a, out.data(), 256);
  EXPECT_EQ(in, out);
}

TEST_F(Verbs, UnalignedReadsAndWritesKeepNeighbours) {
  GlobalAddress a = c.alloc(64);
  std::vector<uint8_t> ones(64, 0xff);
  c.write(a, ones.data(), 64);
  const char msg[] = "hello, disaggregated";
  c.write(a + 3, msg, sizeof(msg) - 1);  // starts and ends mid-word
  std::vector<uint8_t> out(64);
  c.read(a, out.data(), 64);
  EXPECT_EQ(out[0], 0xff);
  EXPECT_EQ(out[2], 0xff);
  EXPECT_EQ(std::memcmp(out.data() + 3, msg, sizeof(msg) - 1), 0);
  EXPECT_EQ(out[3 + sizeof(msg) - 1], 0xff);
  char part[5] = {};
  c.read(a + 10, part, 5);
  EXPECT_EQ(std::memcmp(part, msg + 7, 5), 0);
}

// local::read and local::write (every transport's verbs on CPU memory) at every start offset
// inside a word and every length up to 10 words: exactly the bytes asked for move, and the
// neighbouring bytes on both sides stay as they were.
TEST(LocalMemory, ReadAndWriteEveryAlignmentAndLength) {
  alignas(8) std::byte region[128];
  std::byte src[96], dst[96 + 16];
  for (size_t i = 0; i < sizeof(src); ++i) src[i] = std::byte(i * 13 + 5);
  for (size_t off = 0; off < 16; ++off)
    for (size_t len = 0; len <= 80; ++len) {
      std::memset(region, 0xee, sizeof(region));
      local::write(region + off, src, len);
      for (size_t i = 0; i < sizeof(region); ++i) {
        const bool inside = i >= off && i < off + len;
        ASSERT_EQ(region[i], inside ? src[i - off] : std::byte{0xee})
            << "write off " << off << " len " << len << " byte " << i;
      }
      std::memset(dst, 0x11, sizeof(dst));
      local::read(region + off, dst + 8, len);
      for (size_t i = 0; i < sizeof(dst); ++i) {
        const bool inside = i >= 8 && i < 8 + len;
        ASSERT_EQ(dst[i], inside ? src[i - 8] : std::byte{0x11})
            << "read off " << off << " len " << len << " byte " << i;
      }
    }
}

TEST_F(Verbs, CasReturnsPriorValueAndSwapsOnlyOnMatch) {
  GlobalAddress w = c.alloc(8);
  EXPECT_EQ(c.cas(w, 0, 42), 0u);
  EXPECT_EQ(c.read_value<uint64_t>(w), 42u);
  EXPECT_EQ(c.cas(w, 7, 99), 42u);  // mismatch: returns current, no change
  EXPECT_EQ(c.read_value<uint64_t>(w), 42u);
}

TEST_F(Verbs, FaaReturnsPriorValue) {
  GlobalAddress w = c.alloc(8);
  EXPECT_EQ(c.faa(w, 5), 0u);
  EXPECT_EQ(c.faa(w, uint64_t(-2)), 5u);
  EXPECT_EQ(c.read_value<uint64_t>(w), 3u);
}

TEST_F(Verbs, MaskedCasComparesAndSwapsOnlyMaskedBits) {
  GlobalAddress w = c.alloc(8);
  uint64_t init = 0x1111222233334444ull;
  c.write(w, &init, 8);
  // Compare the low 16 bits (0x4444), replace bits 16..31.
  uint64_t old = c.masked_cas(w, 0x4444, 0xffff, 0xabcd0000, 0xffff0000);
  EXPECT_EQ(old, init);
  EXPECT_EQ(c.read_value<uint64_t>(w), 0x11112222abcd4444ull);
  // Masked mismatch: nothing changes, the prior value comes back.
  old = c.masked_cas(w, 0x0000, 0xffff, ~0ull, ~0ull);
  EXPECT_EQ(old, 0x11112222abcd4444ull);
  EXPECT_EQ(c.read_value<uint64_t>(w), 0x11112222abcd4444ull);
  // shm has no native masked CAS: each one is counted as emulated, never as a plain CAS.
  EXPECT_EQ(c.counters().total.emulated_masked_cas, 2u);
  EXPECT_EQ(c.counters().total.count(VerbKind::kMaskedCas), 2u);
  EXPECT_EQ(c.counters().total.count(VerbKind::kCas), 0u);
  EXPECT_FALSE(c.native_masked_cas());
}

TEST_F(Verbs, BatchIsOrderedAndOneRoundTrip) {
  GlobalAddress a = c.alloc(64);
  uint64_t v1 = 10, seen_after_write = 0, cas_old = 0, faa_old = 0, final_value = 0;
  Batch b;
  b.write(a, &v1, 8)
      .read(a, &seen_after_write, 8)  // sees the write before it
      .cas(a, 10, 20, &cas_old)       // succeeds because of the write
      .faa(a, 5, &faa_old)            // sees the CAS
      .read(a, &final_value, 8);
  uint64_t rt = c.counters().total.round_trips;
  c.run(b);
  EXPECT_EQ(c.counters().total.round_trips, rt + 1);
  EXPECT_EQ(seen_after_write, 10u);
  EXPECT_EQ(cas_old, 10u);
  EXPECT_EQ(faa_old, 20u);
  EXPECT_EQ(final_value, 25u);
}

TEST_F(Verbs, BatchesToSeveralNodesAreOneRoundTrip) {
  GlobalAddress a0 = c.alloc_on(0, 8), a1 = c.alloc_on(1, 8);
  uint64_t x = 1, y = 2, rx = 0, ry = 0;
  Batch b[2];
  b[0].write(a0, &x, 8).read(a0, &rx, 8);
  b[1].write(a1, &y, 8).read(a1, &ry, 8);
  Counters before = c.counters();
  c.run(std::span<Batch>(b, 2));
  EXPECT_EQ(rx, 1u);
  EXPECT_EQ(ry, 2u);
  EXPECT_EQ(c.counters().total.round_trips - before.total.round_trips, 1u);
  EXPECT_EQ(c.counters().by_node[0].round_trips - before.by_node[0].round_trips, 1u);
  EXPECT_EQ(c.counters().by_node[1].round_trips - before.by_node[1].round_trips, 1u);
  EXPECT_EQ(
      c.counters().role(NodeRole::kMemory).round_trips - before.role(NodeRole::kMemory).round_trips,
      1u);
}

TEST_F(Verbs, BatchRejectsMixedNodesUnalignedAtomicsAndOverflow) {
  Batch b;
  b.read(GlobalAddress(0, 4096), nullptr, 0);
  EXPECT_THROW(b.read(GlobalAddress(1, 4096), nullptr, 0), AddressError);
  Batch a;
  EXPECT_THROW(a.cas(GlobalAddress(0, 4100), 0, 1), AddressError);
  Batch full;
  uint64_t x;
  for (size_t i = 0; i < Batch::kMaxVerbs; ++i) full.read(GlobalAddress(0, 4096), &x, 8);
  EXPECT_THROW(full.read(GlobalAddress(0, 4096), &x, 8), LimitError);
}

// Batch::release on shm: an ordinary WRITE (CPU stores are atomic with the CPU's CAS), counted
// as one, with either end as the lock word; a lock word that is not whole and aligned is refused.
TEST_F(Verbs, LockReleaseIsAWriteHereAndItsWordMustBeWhole) {
  GlobalAddress a = c.alloc(64);
  EXPECT_EQ(test::check_lock_releases(c, a).atomic_releases, 0u);
  uint64_t img[2] = {};
  Batch bad;
  uint64_t x = 0;
  EXPECT_THROW(bad.release(a + 4, &x, 8), AddressError);  // word not aligned
  EXPECT_THROW(bad.release(a, &x, 4), AddressError);      // no whole word
  EXPECT_THROW(bad.release(a, img, 12), AddressError);    // the last word would be unaligned
  EXPECT_TRUE(bad.empty());
}

TEST_F(Verbs, OutOfRegionAccessIsAnErrorNotACrash) {
  uint64_t x = 0;
  uint64_t size = pool->region(0).bytes;
  EXPECT_THROW(c.read(GlobalAddress(0, size - 4), &x, 8), AddressError);
  EXPECT_THROW(c.read(GlobalAddress(9, 4096), &x, 8), AddressError);
}

TEST_F(Verbs, CountersSplitByKindNodeAndRole) {
  GlobalAddress m = c.alloc_on(0, 64);
  NodeId cn = pool->config().compute_nodes()[0];
  GlobalAddress comp(cn, layout::heap_start(pool->config().mailbox));
  uint64_t x = 0;
  Counters before = c.counters();
  c.read(m, &x, 8);
  c.write(m, &x, 8);
  c.cas(comp, 0, 1);
  c.faa(comp, 1);
  const Counters& now = c.counters();
  auto d = now.total - before.total;
  EXPECT_EQ(d.count(VerbKind::kRead), 1u);
  EXPECT_EQ(d.count(VerbKind::kWrite), 1u);
  EXPECT_EQ(d.count(VerbKind::kCas), 1u);
  EXPECT_EQ(d.count(VerbKind::kFaa), 1u);
  EXPECT_EQ(d.round_trips, 4u);
  EXPECT_EQ(d.bytes_read, 8u + 16u);  // READ payload plus the 8 bytes each atomic returns
  EXPECT_EQ(d.bytes_written, 8u + 16u);
  auto mem = now.role(NodeRole::kMemory) - before.role(NodeRole::kMemory);
  auto cmp = now.role(NodeRole::kCompute) - before.role(NodeRole::kCompute);
  EXPECT_EQ(mem.total_verbs(), 2u);
  EXPECT_EQ(cmp.total_verbs(), 2u);
  EXPECT_EQ((now.by_node[cn] - before.by_node[cn]).round_trips, 2u);
}

// Device memory (dmrt/runtime/address.h) on shm: plain memory of its own, the same verbs and
// counts.
TEST_F(Verbs, DeviceMemoryIsARegionOfItsOwn) {
  GlobalAddress d = c.alloc_device_memory(0, 16);
  EXPECT_EQ(d, GlobalAddress::device(0, 0));
  EXPECT_EQ(c.alloc_device_memory(1, 8), GlobalAddress::device(1, 0));
  EXPECT_EQ(c.alloc_device_memory(0, 8), GlobalAddress::device(0, 64));
  EXPECT_EQ(c.read_value<uint64_t>(d), 0u);
  const Counters before = c.counters();
  EXPECT_EQ(c.cas(d, 0, 5), 0u);
  EXPECT_EQ(c.faa(d, 2), 5u);
  uint64_t v = 0;
  c.read(d, &v, 8);
  EXPECT_EQ(v, 7u);
  const Counters after = c.counters();
  EXPECT_EQ(after.total.round_trips - before.total.round_trips, 3u);
  EXPECT_EQ(after.total.bytes_read - before.total.bytes_read, 24u);
  // Its own memory: the host region at the same offset is the region header, untouched.
  EXPECT_EQ(c.read_value<uint64_t>({0, layout::kMagicOffset}), layout::kMagic);
  EXPECT_EQ(std::memcmp(pool->device_region(0).base, &v, 8), 0);
  // Bounds: the node's device memory, then exhaustion.
  const uint64_t dm = pool->device_region(0).bytes;
  EXPECT_EQ(dm, NodeSpec::kDefaultDeviceMemoryBytes);
  EXPECT_THROW(c.read(GlobalAddress::device(0, dm - 8), &v, 16), AddressError);
  EXPECT_THROW(c.alloc_device_memory(0, dm), PoolExhausted);
  // The compute node has none.
  EXPECT_THROW(c.alloc_device_memory(2, 8), PoolExhausted);
  EXPECT_THROW(c.read(GlobalAddress::device(2, 0), &v, 8), AddressError);
}

TEST(DeviceMemory, IsNeverALocalAccess) {
  // A compute node with device memory of its own: reads of it keep the network path (the CPU
  // cannot load NIC memory), and so does a host-memory batch to the node in the same group.
  ClusterConfig cfg = ClusterConfig::embedded(1, 1, uint64_t{64} << 20, uint64_t{8} << 20);
  cfg.nodes[1].device_memory_bytes = 4096;
  auto pool = shm::Pool::create(cfg);
  testing::ShmClient cl(shm::Endpoint(pool, 1, 0));
  GlobalAddress d = cl.alloc_device_memory(1, 64);
  uint64_t v = 0, w = 0;
  cl.read(d, &v, 8);
  EXPECT_EQ(cl.counters().total.local_accesses, 0u);
  cl.read({1, layout::kMagicOffset}, &v, 8);
  EXPECT_EQ(cl.counters().total.local_accesses, 1u);
  Batch two[2];
  two[0].read({1, layout::kMagicOffset}, &v, 8);
  two[1].read(d, &w, 8);
  const uint64_t rt = cl.counters().total.round_trips;
  cl.run(std::span<Batch>(two, 2));
  EXPECT_EQ(cl.counters().total.local_accesses, 1u);
  EXPECT_EQ(cl.counters().total.round_trips, rt + 1);
}

TEST(DeviceMemory, NamedPoolsShareIt) {
  const std::string name = "dmtest" + std::to_string(getpid());
  auto pool =
      shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{64} << 20, uint64_t{8} << 20), name);
  testing::ShmClient a(shm::Endpoint(pool, 1, 0));
  GlobalAddress d = a.alloc_device_memory(0, 8);
  a.faa(d, 41);
  auto attached = shm::Pool::attach(name);
  EXPECT_EQ(attached->config().nodes[0].device_memory_bytes, NodeSpec::kDefaultDeviceMemoryBytes);
  EXPECT_EQ(attached->config().nodes[1].device_memory_bytes, 0u);
  testing::ShmClient b(shm::Endpoint(attached, 1, 1));
  EXPECT_EQ(b.faa(d, 1), 41u);
  EXPECT_EQ(b.alloc_device_memory(0, 8), GlobalAddress::device(0, 64));
}

}  // namespace
}  // namespace dmrt
