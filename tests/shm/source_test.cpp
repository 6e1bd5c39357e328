// shm pools on a file (dmrt/policies/shm/source.h): created, attached by layout, refused when the
// file is truncated, of another geometry or has a corrupt header word; the creator closes it; the
// waits of such a pool poll and ring no bell; a compute node's claim names its host.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "dmrt/policies/shm/idle.h"
#include "dmrt/policies/shm/pool.h"
#include "dmrt/policies/shm/processes.h"
#include "dmrt/policies/shm/provenance_json.h"
#include "dmrt/policies/shm/source.h"
#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/placement.h"

namespace dmrt {
namespace {

// A pool file of its own per test, removed at the end.
struct PoolFile {
  std::string path;
  PoolFile() {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/dmrt-source-test-" +
           std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::remove(path.c_str());
  }
  ~PoolFile() { std::remove(path.c_str()); }
  shm::PoolSource source() const { return {path, -1}; }
};

// One memory node (16 MiB, 256 KiB device memory) and two compute nodes (8 MiB).
ClusterConfig small_config() {
  return ClusterConfig::embedded(1, 2, uint64_t{16} << 20, uint64_t{8} << 20);
}

// The text of the ConfigError `f` throws ("" when it throws none).
std::string config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ShmPoolSource, AFilePoolIsCreatedAndAttachedByLayout) {
  PoolFile f;
  const ClusterConfig config = small_config();
  auto pool = shm::Pool::create(config, f.source());
  EXPECT_TRUE(pool->polling_waits());
  EXPECT_EQ(pool->name(), f.path);
  // The regions lie one after the other, each on a 2 MiB boundary, device memory after its node.
  const std::byte* base = pool->region(0).base;
  EXPECT_EQ(pool->device_region(0).base - base, int64_t{16} << 20);
  EXPECT_EQ(pool->region(1).base - base, int64_t{18} << 20);
  EXPECT_EQ(pool->region(2).base - base, int64_t{26} << 20);
  EXPECT_EQ(shm::Pool::source_bytes_needed(config), uint64_t{34} << 20);

  auto other = shm::Pool::attach(f.source(), &config);
  ASSERT_EQ(other->node_count(), 3u);
  EXPECT_TRUE(other->polling_waits());
  EXPECT_FALSE(other->owner());
  EXPECT_EQ(other->region(1).role, NodeRole::kCompute);
  EXPECT_EQ(other->device_region(0).bytes, config.nodes[0].device_memory_bytes);
  // The same bytes through two mappings: a verb through one is seen through the other.
  Client<ShmTransport> a(shm::Endpoint(pool, 1, 1));
  Client<ShmTransport> b(shm::Endpoint(other, 2, 1));
  const GlobalAddress w = a.alloc(64);
  const uint64_t v = 0x1234;
  a.write(w, &v, 8);
  EXPECT_EQ(b.read_value<uint64_t>(w), v);
  EXPECT_EQ(b.faa(w, 1), v);
  const GlobalAddress dm = b.alloc_device_memory(0, 64);
  b.write(dm, &v, 8);
  EXPECT_EQ(a.read_value<uint64_t>(dm), v);

  const shm::PoolProvenance p = other->provenance();
  EXPECT_EQ(p.kind, "file");
  EXPECT_EQ(p.path, f.path);
  EXPECT_EQ(p.pool_bytes, shm::Pool::source_bytes_needed(config));
  EXPECT_EQ(p.source_bytes, p.pool_bytes);
  EXPECT_EQ(p.waits, "polling");
  EXPECT_TRUE(has(p.kernel_path, "file on ")) << p.kernel_path;
  const nlohmann::json j = p;
  EXPECT_EQ(j["kind"], "file");
  EXPECT_EQ(j["waits"], "polling");
  EXPECT_TRUE(j["pages"].contains("by_numa_node"));
}

TEST(ShmPoolSource, ANewPoolStartsZeroedOverAnOldOne) {
  PoolFile f;
  GlobalAddress w;
  {
    auto pool = shm::Pool::create(small_config(), f.source());
    Client<ShmTransport> c(shm::Endpoint(pool, 1, 1));
    w = c.alloc(64);
    const uint64_t v = 77;
    c.write(w, &v, 8);
    c.write(layout::root_slot(0, 3), &v, 8);
  }
  auto pool = shm::Pool::create(small_config(), f.source());
  Client<ShmTransport> c(shm::Endpoint(pool, 1, 1));
  EXPECT_EQ(c.read_value<uint64_t>(w), 0u);
  EXPECT_EQ(c.read_value<uint64_t>(layout::root_slot(0, 3)), 0u);
}

TEST(ShmPoolSource, ThePoolsCreatorClosesIt) {
  PoolFile f;
  { auto pool = shm::Pool::create(small_config(), f.source()); }
  // The file stays; a process attaching now waits for the next creator (the bench's wording).
  EXPECT_EQ(access(f.path.c_str(), F_OK), 0);
  EXPECT_TRUE(has(config_error([&] { shm::Pool::attach(f.source()); }), "still being created"));
}

TEST(ShmPoolSource, APoolOfAnotherGeometryIsRefused) {
  PoolFile f;
  auto pool = shm::Pool::create(small_config(), f.source());
  ClusterConfig bigger = ClusterConfig::embedded(1, 2, uint64_t{32} << 20, uint64_t{8} << 20);
  std::string e = config_error([&] { shm::Pool::attach(f.source(), &bigger); });
  EXPECT_TRUE(has(e, "another geometry")) << e;
  EXPECT_TRUE(has(e, "memory 16 MiB")) << e;
  EXPECT_TRUE(has(e, "memory 32 MiB")) << e;
  ClusterConfig fewer = ClusterConfig::embedded(1, 1, uint64_t{16} << 20, uint64_t{8} << 20);
  EXPECT_TRUE(
      has(config_error([&] { shm::Pool::attach(f.source(), &fewer); }), "another geometry"));
  ClusterConfig mail = small_config();
  mail.mailbox.slots = 16;
  EXPECT_TRUE(has(config_error([&] { shm::Pool::attach(f.source(), &mail); }), "another geometry"));
}

TEST(ShmPoolSource, ATruncatedFileIsRefused) {
  PoolFile f;
  auto pool = shm::Pool::create(small_config(), f.source());
  auto attach = [&] { shm::Pool::attach(f.source()); };
  // Into the last compute node's region, into the memory node's, then less than a header: every
  // size is the file's, never a header's.
  ASSERT_EQ(truncate(f.path.c_str(), (uint64_t{26} << 20) + (uint64_t{4} << 20)), 0);
  std::string e = config_error(attach);
  EXPECT_TRUE(has(e, "node 2") && has(e, "truncated")) << e;
  ASSERT_EQ(truncate(f.path.c_str(), uint64_t{26} << 20), 0);
  e = config_error(attach);
  EXPECT_TRUE(has(e, "node 2") && has(e, "truncated")) << e;
  ASSERT_EQ(truncate(f.path.c_str(), uint64_t{1} << 20), 0);
  e = config_error(attach);
  EXPECT_TRUE(has(e, "node 0") && has(e, "truncated")) << e;
  ASSERT_EQ(truncate(f.path.c_str(), 100), 0);
  e = config_error(attach);
  EXPECT_TRUE(has(e, "is not initialised")) << e;
}

// Each header word attach reads, made wrong in turn through the creator's mapping (restored after
// each): every one is refused with a ConfigError naming the node, never a crash or a mapping
// sized by it.
TEST(ShmPoolSource, CorruptHeaderWordsAreRefused) {
  PoolFile f;
  auto pool = shm::Pool::create(small_config(), f.source());
  struct Case {
    NodeId node;
    uint64_t offset;
    uint64_t value;
    const char* says;
  };
  const Case cases[] = {
      {0, layout::kMagicOffset, 0x1234, "not a dmrt pool"},
      {1, layout::kMagicOffset, 0, "not formatted"},
      {0, layout::kVersionOffset, 99, "layout version 99"},
      {0, layout::kRegionBytesOffset, uint64_t{1} << 40, "truncated or resized"},
      {1, layout::kRegionBytesOffset, uint64_t{64} << 20, "truncated or resized"},
      {0, layout::kRegionBytesOffset, 100, "region is 100 bytes"},
      {1, layout::kRegionBytesOffset, uint64_t{4} << 20, "differs"},  // node 2 is then misplaced
      {0, layout::kNodeCountOffset, 0, "0 nodes"},
      {0, layout::kNodeCountOffset, 70000, "70000 nodes"},
      {0, layout::kNodeCountOffset, 5, "differs from node 0's"},
      {1, layout::kNodeCountOffset, 2, "differs from node 0's"},
      {0, layout::kMailboxGeomOffset, 0, "mailbox geometry"},
      {0, layout::kSlotBytesOffset, 1, "mailbox geometry"},
      {1, layout::kNodeInfoOffset, 7, "names another node"},
      {1, layout::kNodeInfoOffset, 1 | (uint64_t{5} << 16), "no role"},
      {0, layout::kDeviceMemoryBytesOffset, 100, "device memory"},
      {0, layout::kDeviceMemoryBytesOffset, uint64_t{2} << 30, "device memory"},
      {0, layout::kDeviceMemoryBytesOffset, uint64_t{4} << 20, "differs"},  // pushes node 1 along
  };
  for (const Case& c : cases) {
    std::byte* word = pool->region(c.node).base + c.offset;
    const uint64_t saved = local::load_word(word);
    local::store_word(word, c.value);
    const std::string e = config_error([&] { shm::Pool::attach(f.source()); });
    local::store_word(word, saved);
    EXPECT_FALSE(e.empty()) << "node " << c.node << " word " << c.offset << " = " << c.value;
    // "differs": the lie moves the next region, whose header is then found wrong somewhere.
    if (std::string(c.says) != "differs") {
      EXPECT_TRUE(has(e, c.says)) << "node " << c.node << " word " << c.offset << ": " << e;
    }
  }
  EXPECT_NO_THROW(shm::Pool::attach(f.source()));  // all restored
  // A last region that says it is smaller is a pool of another geometry, consistent in itself:
  // the expected geometry refuses it (and the attacher's verbs stay inside what it maps).
  std::byte* last = pool->region(2).base + layout::kRegionBytesOffset;
  local::store_word(last, uint64_t{4} << 20);
  const ClusterConfig config = small_config();
  const std::string e = config_error([&] { shm::Pool::attach(f.source(), &config); });
  local::store_word(last, uint64_t{8} << 20);
  EXPECT_TRUE(has(e, "another geometry")) << e;
}

// Random values in the words attach reads, one or two at a time: a pool or a ConfigError, never a
// crash, a hang or another exception (the sizes are the file's).
TEST(ShmPoolSource, RandomHeaderWordsNeverCrash) {
  PoolFile f;
  auto pool = shm::Pool::create(small_config(), f.source());
  uint64_t r = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    return r;
  };
  for (int i = 0; i < 300; ++i) {
    const NodeId n = static_cast<NodeId>(next() % 3);
    std::byte* word = pool->region(n).base + 8 * (next() % 12);  // words 0..88
    const uint64_t saved = local::load_word(word);
    const uint64_t v = next();
    local::store_word(word, (v & 1) ? v : v % (uint64_t{64} << 20));
    try {
      shm::Pool::attach(f.source());
    } catch (const ConfigError&) {
    }
    local::store_word(word, saved);
  }
}

TEST(ShmPoolSource, WhatIsNotAPoolIsRefusedClearly) {
  PoolFile f;
  std::string e = config_error([&] { shm::Pool::attach(f.source()); });
  EXPECT_TRUE(has(e, "no pool named")) << e;
  e = config_error([&] { shm::Pool::create(small_config(), shm::PoolSource{"/dev/dax99.9", -1}); });
  EXPECT_TRUE(has(e, "no such device")) << e;
  e = config_error([&] { shm::Pool::attach(shm::PoolSource{"/dev/null", -1}); });
  EXPECT_TRUE(has(e, "not a device-dax")) << e;
  e = config_error([&] { shm::Pool::attach(shm::PoolSource{"/tmp", -1}); });
  EXPECT_TRUE(has(e, "neither")) << e;
  e = config_error([&] { shm::Pool::attach(shm::PoolSource{f.path, 0}); });
  EXPECT_TRUE(has(e, "NUMA binding is made by the process that creates it")) << e;
  EXPECT_TRUE(shm::PoolSource::is_path("./p"));
  EXPECT_FALSE(shm::PoolSource::is_path("name"));
}

TEST(ShmPoolSource, APoolIsBoundToANumaNodeWhenAsked) {
  PoolFile f;
  shm::PoolSource s = f.source();
  s.numa_node = 1000;
  std::string e = config_error([&] { shm::Pool::create(small_config(), s); });
  EXPECT_TRUE(has(e, "NUMA")) << e;
#ifdef DMRT_HAVE_NUMA
  const int last = placement::host_numa_nodes() - 1;  // a CPU-less node is the last one, if any
  s.numa_node = last;
  auto pool = shm::Pool::create(small_config(), s);
  const shm::PoolProvenance p = pool->provenance();
  EXPECT_TRUE(p.numa_bound);
  EXPECT_EQ(p.numa_node, last);
  // posix_fallocate put every page there already (a file on tmpfs or a disk's page cache: the
  // binding holds for shmem; a disk file's pages are wherever its page cache is).
  if (p.filesystem == "tmpfs" && p.pages_sampled) {
    ASSERT_EQ(p.pages_by_numa_node.size(), 1u);
    EXPECT_EQ(p.pages_by_numa_node[0].first, last);
  }
#endif
}

// A pool from a path rings no bell: its senders write no futex word, and a waiting thread polls
// (IdleThread::pause_polling) with the bounded backoff.
TEST(ShmPoolSource, WaitsPollWithABoundedBackoff) {
  PoolFile f;
  auto pool = shm::Pool::create(small_config(), f.source());
  Client<ShmTransport> a(shm::Endpoint(pool, 1, 1));
  Client<ShmTransport> b(shm::Endpoint(pool, 2, 1));
  const uint64_t x = 5;
  a.send(2, 1, 7, {reinterpret_cast<const std::byte*>(&x), 8});
  Message m;
  for (int i = 0; i < 100000 && !b.try_receive(1, m); ++i) b.endpoint().pause();
  EXPECT_EQ(m.tag, 7u);
  for (unsigned i = 0; i < 2000; ++i) b.endpoint().pause();  // sleeps, a few hundred us in all
  const std::byte* bells = pool->region(0).base + layout::kIdleBellOffset;
  for (uint64_t i = 0; i < shm::IdleBell::kStride * shm::IdleBell::kBells; ++i)
    ASSERT_EQ(bells[i], std::byte{0}) << "bell byte " << i;

  shm::IdleThread t;
  using IT = shm::IdleThread;
  for (uint32_t i = 0; i + 1 < IT::kArmAfter + IT::kRecheck; ++i) t.pause_polling();
  EXPECT_EQ(t.poll_ns, 0u);  // no sleep before kArmAfter + kRecheck pauses
  t.pause_polling();
  EXPECT_EQ(t.poll_ns, IT::kFirstPollNs);
  uint64_t last = t.poll_ns;
  for (int round = 0; round < 10; ++round) {
    for (uint32_t i = 0; i < IT::kRecheck; ++i) t.pause_polling();
    EXPECT_EQ(t.poll_ns, std::min(2 * last, IT::kSleepNs));
    last = t.poll_ns;
  }
  EXPECT_EQ(t.poll_ns, IT::kSleepNs);  // the bound
  t.progress();
  EXPECT_EQ(t.poll_ns, 0u);
}

TEST(ShmPoolSource, AComputeNodesClaimNamesItsHost) {
  PoolFile f;
  auto pool = shm::Pool::create(small_config(), f.source());
  std::byte* word = pool->region(1).base + layout::kClaimOffset;
  {
    shm::NodeClaim claim(*pool, 1);
    EXPECT_EQ(local::load_word(word),
              uint64_t{shm::host_tag()} << 32 | static_cast<uint64_t>(getpid()));
  }
  EXPECT_EQ(local::load_word(word), 0u);
  // A claim of another host: refused, never taken over (no kill(2) reaches there).
  const uint32_t other = shm::host_tag() ^ 0x5a5a5a5;
  local::store_word(word, uint64_t{other ? other : 1} << 32 | 1);
  std::string e = config_error([&] { shm::NodeClaim claim(*pool, 1); });
  EXPECT_TRUE(has(e, "on another host")) << e;
  // A claim of this host by a process that is gone: taken over.
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  waitpid(gone, nullptr, 0);
  local::store_word(word, uint64_t{shm::host_tag()} << 32 | static_cast<uint64_t>(gone));
  EXPECT_NO_THROW(shm::NodeClaim claim(*pool, 1));
}

}  // namespace
}  // namespace dmrt
