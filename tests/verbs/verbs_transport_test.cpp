// verbs transport tests: run against any RDMA device (Soft-RoCE in tests/vm/run.sh); skip cleanly
// when the host has none. One process plays two memory nodes and a compute node, each with its
// own device context, PD, region and TCP bootstrap endpoint, joined over RC QPs.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../common/lock_release.h"
#include "dmrt/policies/verbs/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt {
namespace {

using VClient = Client<VerbsTransport>;

uint16_t free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t l = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l);
  close(fd);
  return ntohs(a.sin_port);
}

ClusterConfig small_config() {
  ClusterConfig c;
  c.mailbox.mailboxes = 16;
  c.mailbox.slots = 8;
  c.mailbox.slot_bytes = 256;
  for (int i = 0; i < 3; ++i) {
    NodeSpec n;
    n.role = i < 2 ? NodeRole::kMemory : NodeRole::kCompute;
    n.region_bytes = i < 2 ? (uint64_t{16} << 20) : (uint64_t{4} << 20);
    n.address = "127.0.0.1:" + std::to_string(free_port());
    c.nodes.push_back(n);
  }
  c.validate();
  return c;
}

class Verbs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    if (!verbs::device_available(&why)) {
      skip_reason_ = why;
      return;
    }
    config_ = small_config();
    verbs::Options o;
    o.threads = 1;
    o.connect_timeout_ms = 20000;
    // 4.3 s instead of 67 ms: in the test VM (emulated CPUs) an ACK can take longer than 67 ms,
    // and Soft-RoCE's replay of a retransmitted atomic is what tests/vm/run.sh steers clear of.
    o.ack_timeout = 20;
    mem0_ = std::make_unique<verbs::Cluster>(config_, 0, o);
    mem1_ = std::make_unique<verbs::Cluster>(config_, 1, o);
    o.threads = 2;
    compute_ = std::make_unique<verbs::Cluster>(config_, 2, o);
    compute_->connect();
    std::printf("%s\n", compute_->report().c_str());
  }
  static void TearDownTestSuite() {
    compute_.reset();
    mem1_.reset();
    mem0_.reset();
  }
  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
  }
  // A fresh heap address on memory node n (no allocator: each test owns its offsets).
  static GlobalAddress scratch(NodeId n, uint64_t bytes) {
    static uint64_t next[3] = {0, 0, 0};
    uint64_t heap = layout::heap_start(config_.mailbox);
    GlobalAddress a{n, heap + next[n]};
    next[n] += (bytes + 63) & ~uint64_t{63};
    return a;
  }

  static inline std::string skip_reason_;
  static inline ClusterConfig config_;
  static inline std::unique_ptr<verbs::Cluster> mem0_, mem1_, compute_;
};

TEST_F(Verbs, RegionIsFormattedLikeShm) {
  verbs::Cluster::ThreadBinding bind(*compute_, 0);
  VClient c(compute_->endpoint(2, 0));
  EXPECT_EQ(c.read_value<uint64_t>({0, layout::kMagicOffset}), layout::kMagic);
  EXPECT_EQ(c.read_value<uint64_t>({1, layout::kNodeInfoOffset}), 1u);
  EXPECT_EQ(c.read_value<uint64_t>({0, layout::kRegionBytesOffset}), config_.nodes[0].region_bytes);
  EXPECT_GE(c.read_value<uint64_t>({0, layout::kBumpOffset}), layout::heap_start(config_.mailbox));
  EXPECT_EQ(c.read_value<uint64_t>({2, layout::kNodeCountOffset}), 3u);  // own node, loopback QP
}

TEST_F(Verbs, EveryVerb) {
  verbs::Cluster::ThreadBinding bind(*compute_, 0);
  VClient c(compute_->endpoint(2, 0));
  GlobalAddress a = scratch(0, 8192);
  std::vector<uint8_t> out(8192), in(8192);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 7 + 3);
  c.write(a, out.data(), 8192);
  c.read(a, in.data(), 8192);
  EXPECT_EQ(in, out);
  GlobalAddress w = scratch(0, 8);
  uint64_t v = 100;
  c.write(w, &v, 8);
  EXPECT_EQ(c.cas(w, 100, 200), 100u);  // hit
  EXPECT_EQ(c.cas(w, 100, 300), 200u);  // miss leaves the word
  EXPECT_EQ(c.read_value<uint64_t>(w), 200u);
  EXPECT_EQ(c.faa(w, 42), 200u);
  EXPECT_EQ(c.read_value<uint64_t>(w), 242u);
  // Masked CAS: compare only the low byte, replace only the high byte.
  uint64_t old = c.masked_cas(w, 242, 0xff, 0xab00000000000000ull, 0xff00000000000000ull);
  EXPECT_EQ(old, 242u);
  EXPECT_EQ(c.read_value<uint64_t>(w), 0xab000000000000f2ull);
  old = c.masked_cas(w, 0x11, 0xff, 0, 0xff00000000000000ull);  // compare fails: unchanged
  EXPECT_EQ(old, 0xab000000000000f2ull);
  EXPECT_EQ(c.read_value<uint64_t>(w), 0xab000000000000f2ull);
  EXPECT_FALSE(c.native_masked_cas());
  EXPECT_EQ(c.counters().total.emulated_masked_cas, 2u);
  EXPECT_EQ(c.counters().by_node[0].emulated_masked_cas, 2u);
}

// Batch::release: the bytes around the lock word, then the word. The word is stored by a READ +
// CAS loop where a WRITE would race the device's CAS (a software device: its failing CAS writes
// the word back) and in the client's own region (a CPU store is not atomic with the NIC's
// atomics); on a NIC's remote memory it is the plain WRITE. Either way it is counted as a WRITE.
TEST_F(Verbs, LockReleasesLandWholeWithTheWordStoredByAnAtomicWhereNeeded) {
  verbs::Cluster::ThreadBinding bind(*compute_, 0);
  VClient c(compute_->endpoint(2, 0));
  const bool soft = compute_->writes_race_atomics();
  for (NodeId n : {NodeId{0}, NodeId{2}}) {
    SCOPED_TRACE("node " + std::to_string(n));
    GlobalAddress a = scratch(n, 64);
    EXPECT_EQ(test::check_lock_releases(c, a).atomic_releases, soft || n == 2 ? 2u : 0u);
    // A lone lock word, released to a value that is not 0 (a hand-on).
    uint64_t moved = 0x8000000000000002ull;
    c.release(a + 24, &moved, 8);
    EXPECT_EQ(c.read_value<uint64_t>(a + 24), moved);
  }
}

// Data to the client's own node is copied from its registered region (a local access, no round
// trip); atomics there loop back through the NIC, and they and the local copies see each other.
TEST_F(Verbs, OwnNodeDataIsALocalAccessAndAtomicsLoopBack) {
  verbs::Cluster::ThreadBinding bind(*compute_, 0);
  VClient c(compute_->endpoint(2, 0));
  GlobalAddress a = scratch(2, 64);
  const VerbCounters before = c.counters().total;
  uint64_t v = 7, r = 0;
  c.write(a, &v, 8);
  c.read(a, &r, 8);
  EXPECT_EQ(r, 7u);
  EXPECT_EQ(c.faa(a, 1), 7u);                // the NIC sees the local WRITE
  EXPECT_EQ(c.read_value<uint64_t>(a), 8u);  // the local READ sees the NIC's FAA
  VerbCounters d = c.counters().total - before;
  EXPECT_EQ(d.local_accesses, 3u);
  EXPECT_EQ(d.round_trips, 1u);
  // With an atomic to the own node in the group, its READ stays on the QP, ordered after it.
  Batch b[2];
  b[0].faa(a, 1, nullptr);
  b[1].read(a, &r, 8);
  c.run(std::span<Batch>(b, 2));
  EXPECT_EQ(r, 9u);
  d = c.counters().total - before;
  EXPECT_EQ(d.local_accesses, 3u);
  EXPECT_EQ(d.round_trips, 2u);
}

TEST_F(Verbs, BatchIsOrderedAndBatchesToTwoNodesRunTogether) {
  verbs::Cluster::ThreadBinding bind(*compute_, 0);
  VClient c(compute_->endpoint(2, 0));
  GlobalAddress a0 = scratch(0, 64), a1 = scratch(1, 64);
  uint64_t five = 5, r0 = 0, r1 = 0, f0 = 0, c0 = 0, m0 = 0;
  Batch b[2];
  b[0].write(a0, &five, 8)
      .faa(a0, 3, &f0)
      .read(a0, &r0, 8)
      .cas(a0, 8, 9, &c0)
      .masked_cas(a0, 9, ~0ull, 0x100, 0x100, &m0);
  b[1].write(a1, &five, 8).faa(a1, 10, nullptr).read(a1, &r1, 8);
  uint64_t rt = c.counters().total.round_trips;
  c.run(std::span<Batch>(b, 2));
  EXPECT_EQ(c.counters().total.round_trips, rt + 1);  // two nodes in flight: one round trip
  EXPECT_EQ(f0, 5u);                                  // FAA saw the WRITE before it
  EXPECT_EQ(r0, 8u);                                  // READ saw the FAA
  EXPECT_EQ(c0, 8u);                                  // CAS hit
  EXPECT_EQ(m0, 9u);                                  // masked CAS saw the CAS
  EXPECT_EQ(c.read_value<uint64_t>(a0), 0x109u);
  EXPECT_EQ(r1, 15u);
  // A long batch (32 verbs) of small writes then reads back.
  Batch big;
  uint64_t vals[16], back[16];
  GlobalAddress base = scratch(1, 16 * 8);
  for (int i = 0; i < 16; ++i) {
    vals[i] = 1000 + i;
    big.write(base + 8 * i, &vals[i], 8);
  }
  for (int i = 0; i < 16; ++i) big.read(base + 8 * i, &back[i], 8);
  c.run(big);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(back[i], 1000u + i);
}

TEST_F(Verbs, LargeTransfersRegisterOnDemand) {
  verbs::Cluster::ThreadBinding bind(*compute_, 0);
  VClient c(compute_->endpoint(2, 0));
  GlobalAddress a = scratch(1, 1 << 20);
  std::vector<uint32_t> out(1 << 18), in(1 << 18);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint32_t>(i * 2654435761u);
  uint64_t before = compute_->ondemand_registrations();
  c.write(a, out.data(), 1 << 20);
  c.read(a, in.data(), 1 << 20);
  EXPECT_EQ(in, out);
  EXPECT_EQ(compute_->ondemand_registrations(), before + 2);
  EXPECT_THROW(c.read({0, config_.nodes[0].region_bytes - 4}, in.data(), 8), AddressError);
}

TEST_F(Verbs, AtomicsFromSeveralThreadsAndQpsAreExact) {
  GlobalAddress counter = scratch(0, 8), cas_counter = scratch(1, 8);
  constexpr int kOps = 150;
  Scheduler s({2, 4});
  std::atomic<uint64_t> cas_retries{0};
  s.run(
      [&](const WorkerId& w) {
        VClient c(compute_->endpoint(2, w.index));
        for (int i = 0; i < kOps; ++i) c.faa(counter, 1);
        for (int i = 0; i < kOps / 3; ++i) {
          uint64_t cur = c.read_value<uint64_t>(cas_counter);
          for (;;) {
            uint64_t got = c.cas(cas_counter, cur, cur + 1);
            if (got == cur) break;
            cur = got;
            ++cas_retries;
          }
        }
      },
      compute_->thread_hooks());
  verbs::Cluster::ThreadBinding bind(*compute_, 0);
  VClient c(compute_->endpoint(2, 0));
  EXPECT_EQ(c.read_value<uint64_t>(counter), 8u * kOps);
  EXPECT_EQ(c.read_value<uint64_t>(cas_counter), 8u * (kOps / 3));
  std::printf("CAS-loop retries under contention: %llu\n",
              static_cast<unsigned long long>(cas_retries.load()));
}

TEST_F(Verbs, MaskedCasFallbackIsExactOnDisjointBitFields) {
  GlobalAddress word = scratch(0, 8);
  constexpr int kIncrements = 40;
  Scheduler s({2, 4});
  std::atomic<uint64_t> emulated{0}, retries{0};
  s.run(
      [&](const WorkerId& w) {
        VClient c(compute_->endpoint(2, w.index));
        unsigned shift = 8 * w.index;  // 8 workers, 8 byte-wide fields
        uint64_t mask = uint64_t{0xff} << shift;
        for (int i = 0; i < kIncrements; ++i) {
          uint64_t cur = c.read_value<uint64_t>(word);
          for (;;) {
            uint64_t field = (cur & mask) >> shift;
            uint64_t old = c.masked_cas(word, cur, mask, (field + 1) << shift, mask);
            if (((old ^ cur) & mask) == 0) break;
            cur = old;
          }
        }
        emulated += c.counters().total.emulated_masked_cas;
        retries += c.counters().total.emulation_retries;
      },
      compute_->thread_hooks());
  verbs::Cluster::ThreadBinding bind(*compute_, 0);
  VClient c(compute_->endpoint(2, 0));
  uint64_t v = c.read_value<uint64_t>(word);
  for (int f = 0; f < 8; ++f)
    EXPECT_EQ((v >> (8 * f)) & 0xff, uint64_t(kIncrements)) << "field " << f;
  EXPECT_EQ(emulated.load(), 8u * kIncrements);  // no retry at the caller: fields are disjoint
  std::printf("masked CAS emulated %llu times, %llu CAS retries inside the loops\n",
              static_cast<unsigned long long>(emulated.load()),
              static_cast<unsigned long long>(retries.load()));
}

TEST_F(Verbs, BadRkeyIsAnErrorCompletionAndTheQpRecovers) {
  verbs::Cluster::ThreadBinding bind(*compute_, 0);
  VClient c(compute_->endpoint(2, 0));
  GlobalAddress a = scratch(1, 64);
  compute_->corrupt_rkey_for_testing(0, 1, 0xdeadbeef);
  uint64_t buf = 0;
  try {
    c.read(a, &buf, 8);
    FAIL() << "READ with a bad rkey succeeded";
  } catch (const TransportError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("RDMA READ"), std::string::npos) << w;
    EXPECT_NE(w.find("remote access error"), std::string::npos) << w;
  }
  // The next verb reconnects the QP (the rkey comes back from the peer).
  uint64_t seven = 7;
  c.write(a, &seven, 8);
  EXPECT_EQ(c.read_value<uint64_t>(a), 7u);
}

TEST_F(Verbs, RequestResponseThroughMailboxes) {
  std::atomic<bool> done{false};
  std::thread service([&] {
    verbs::Cluster::ThreadBinding bind(*mem0_, 0);
    VClient s(mem0_->endpoint(0, 0));
    Message m;
    while (!done.load()) {
      if (!s.try_receive(0, m)) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        continue;
      }
      std::string t(reinterpret_cast<const char*>(m.payload.data()), m.payload.size());
      t = "echo:" + t;
      s.reply(m, m.tag + 1, {reinterpret_cast<const std::byte*>(t.data()), t.size()});
    }
  });
  {
    verbs::Cluster::ThreadBinding bind(*compute_, 0);
    VClient c(compute_->endpoint(2, 3));
    for (int i = 0; i < 20; ++i) {
      std::string body = "ping " + std::to_string(i);
      Message r = c.call(0, 0, 7, {reinterpret_cast<const std::byte*>(body.data()), body.size()});
      EXPECT_EQ(r.tag, 8u);
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.payload.data()), r.payload.size()),
                "echo:" + body);
      EXPECT_EQ(r.from_node, 0);
    }
    EXPECT_EQ(c.counters().total.messages, 20u);
  }
  done = true;
  service.join();
}

TEST_F(Verbs, BarrierAndClearBootstrapErrors) {
  compute_->barrier(1);
  // A peer that never arrives.
  ClusterConfig lonely = config_;
  lonely.nodes[0].address = "127.0.0.1:" + std::to_string(free_port());
  lonely.nodes[2].address = "";
  verbs::Options o;
  o.connect_timeout_ms = 300;
  {
    verbs::Cluster c(lonely, 2, o);
    try {
      c.connect();
      FAIL() << "connected to nobody";
    } catch (const TransportError& e) {
      EXPECT_NE(std::string(e.what()).find("did not answer"), std::string::npos) << e.what();
    }
  }
  // Cluster files that disagree.
  ClusterConfig other = config_;
  other.nodes[0].region_bytes = uint64_t{32} << 20;
  other.nodes[2].address = "";
  {
    verbs::Cluster c(other, 2, o);
    try {
      c.connect();
      FAIL() << "connected with a different cluster config";
    } catch (const TransportError& e) {
      EXPECT_NE(std::string(e.what()).find("cluster config differs"), std::string::npos)
          << e.what();
    }
  }
  // No such device.
  verbs::Options bad;
  bad.device = "no_such_dev9";
  EXPECT_THROW(verbs::Cluster(config_, 2, bad), TransportError);
  bad = {};
  bad.masked_cas = verbs::MaskedCasMode::kNative;
  EXPECT_THROW(verbs::Cluster(config_, 2, bad), ConfigError);
}

// Two Clusters of one process share one steady clock: the measured offset must cover 0, within a
// bound a loopback round trip keeps small. Colocated nodes and the node itself need no exchange.
TEST_F(Verbs, ClockOffsetToAnotherNodeCoversTheTruth) {
  for (NodeId ref : {NodeId{0}, NodeId{1}}) {
    ClockOffset c = compute_->clock_offset(ref);
    EXPECT_LE(static_cast<uint64_t>(c.offset_ns < 0 ? -c.offset_ns : c.offset_ns), c.bound_ns)
        << "node " << ref << ": offset " << c.offset_ns << " +- " << c.bound_ns;
    EXPECT_GT(c.bound_ns, 0u);
    EXPECT_LT(c.bound_ns, 50'000'000u) << "node " << ref;
    std::printf("clock of node %u: offset %lld ns +- %llu ns\n", unsigned(ref),
                static_cast<long long>(c.offset_ns), static_cast<unsigned long long>(c.bound_ns));
  }
  ClockOffset one = compute_->clock_offset(0, 1);  // one sample is enough to be sound
  EXPECT_LE(static_cast<uint64_t>(one.offset_ns < 0 ? -one.offset_ns : one.offset_ns),
            one.bound_ns);
  ClockOffset many = compute_->clock_offset(0, 1000);  // clamped to what one connection carries
  EXPECT_LE(static_cast<uint64_t>(many.offset_ns < 0 ? -many.offset_ns : many.offset_ns),
            many.bound_ns);
  ClockOffset self = compute_->clock_offset(2);
  EXPECT_EQ(self.offset_ns, 0);
  EXPECT_EQ(self.bound_ns, 0u);
  EXPECT_THROW(compute_->clock_offset(7), ConfigError);
  // A node nobody serves: a TransportError naming it.
  ClusterConfig lonely = config_;
  lonely.nodes[0].address = "127.0.0.1:" + std::to_string(free_port());
  lonely.nodes[2].address = "";
  verbs::Options o;
  o.connect_timeout_ms = 200;
  verbs::Cluster c(lonely, 2, o);
  try {
    c.clock_offset(0);
    FAIL() << "measured the clock of nobody";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("node 0"), std::string::npos) << e.what();
  }
}

TEST_F(Verbs, UnboundThreadIsAClearError) {
  VClient c(compute_->endpoint(2, 0));
  uint64_t v;
  EXPECT_THROW(c.read({0, layout::kMagicOffset}, &v, 8), TransportError);
}

// --- device memory (dmrt/runtime/address.h)
// ------------------------------------------------------------ Against the fake device
// (tests/fakeverbs) both paths run: it offers device memory or not as the test asks. On a real
// device the path follows what the device offers.

using SetDeviceMemory = void (*)(uint64_t);
using LiveCount = int (*)();

SetDeviceMemory fake_device_memory() {
  return reinterpret_cast<SetDeviceMemory>(dlsym(RTLD_DEFAULT, "dmrt_fakeverbs_set_device_memory"));
}
int fake_live_dms() {
  auto f = reinterpret_cast<LiveCount>(dlsym(RTLD_DEFAULT, "dmrt_fakeverbs_live_dms"));
  return f ? f() : -1;
}

// One memory node with `dm` bytes of device memory, one compute node.
struct DmCluster {
  ClusterConfig config;
  std::unique_ptr<verbs::Cluster> mem, compute;
  explicit DmCluster(uint64_t dm) {
    config.mailbox.mailboxes = 16;
    config.mailbox.slot_bytes = 256;
    for (int i = 0; i < 2; ++i) {
      NodeSpec n;
      n.role = i == 0 ? NodeRole::kMemory : NodeRole::kCompute;
      n.region_bytes = uint64_t{4} << 20;
      n.device_memory_bytes = i == 0 ? dm : 0;
      n.address = "127.0.0.1:" + std::to_string(free_port());
      config.nodes.push_back(n);
    }
    config.validate();
    verbs::Options o;
    o.threads = 1;
    o.connect_timeout_ms = 20000;
    o.ack_timeout = 20;
    mem = std::make_unique<verbs::Cluster>(config, 0, o);
    compute = std::make_unique<verbs::Cluster>(config, 1, o);
    compute->connect();
  }
};

// Every verb on device memory of `dm` bytes, a batch that mixes it with host memory in order, its
// bounds, its allocator, and its counts (the same as host memory's).
void exercise_device_memory(verbs::Cluster& compute, uint64_t dm) {
  verbs::Cluster::ThreadBinding bind(compute, 0);
  VClient c(compute.endpoint(1, 0));
  GlobalAddress lock = c.alloc_device_memory(0, 8);
  EXPECT_EQ(lock, GlobalAddress::device(0, 0));
  EXPECT_EQ(lock.to_string(), "0:dm+0x0");
  EXPECT_EQ(c.alloc_device_memory(0, 100), GlobalAddress::device(0, 64));  // 64-byte granules
  EXPECT_EQ(c.read_value<uint64_t>(lock), 0u);  // zeroed when the node came up
  const Counters before = c.counters();
  EXPECT_EQ(c.cas(lock, 0, 7), 0u);
  EXPECT_EQ(c.faa(lock, 3), 7u);
  EXPECT_EQ(c.read_value<uint64_t>(lock), 10u);
  const Counters after = c.counters();
  EXPECT_EQ(after.total.round_trips - before.total.round_trips, 3u);
  EXPECT_EQ(after.total.bytes_read - before.total.bytes_read, 24u);
  EXPECT_EQ(after.total.local_accesses, before.total.local_accesses);
  // Lock word in device memory and data in host memory: one batch, in order.
  GlobalAddress host{0, layout::heap_start(compute.config().mailbox)};
  uint64_t v = 42, old = 0, got = 0, seen = 0;
  c.write(host, &v, 8);
  Batch b;
  b.cas(lock, 10, 11, &old).read(host, &got, 8).write(lock + 8, &v, 8).read(lock + 8, &seen, 8);
  c.run(b);
  EXPECT_EQ(old, 10u);
  EXPECT_EQ(got, 42u);
  EXPECT_EQ(seen, 42u);
  EXPECT_EQ(c.read_value<uint64_t>(lock), 11u);
  // Device memory offsets are not host offsets: the region header is where it was.
  EXPECT_EQ(c.read_value<uint64_t>({0, layout::kMagicOffset}), layout::kMagic);
  std::vector<uint8_t> out(4096), in(4096);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 13 + 1);
  c.write(GlobalAddress::device(0, 1024), out.data(), 4096);
  c.read(GlobalAddress::device(0, 1024), in.data(), 4096);
  EXPECT_EQ(in, out);
  EXPECT_THROW(c.read(GlobalAddress::device(0, dm - 8), &v, 16), AddressError);
  EXPECT_THROW(c.alloc_device_memory(0, dm), PoolExhausted);
}

TEST(VerbsDeviceMemory, OnChipWhenTheDeviceOffersIt) {
  std::string why;
  if (!verbs::device_available(&why)) GTEST_SKIP() << why;
  const uint64_t dm = 64 << 10;
  SetDeviceMemory set = fake_device_memory();
  if (set) set(uint64_t{256} << 10);  // the fake device: offer 256 KiB
  {
    DmCluster k(dm);
    const bool offered = k.mem->device().device_memory_bytes() >= dm;
    if (set) {
      EXPECT_TRUE(offered);
      EXPECT_EQ(k.mem->device_memory_mode(), "on-chip");
      EXPECT_EQ(fake_live_dms(), 1);  // ibv_alloc_dm on the memory node only
    } else if (!offered) {
      EXPECT_EQ(k.mem->device_memory_mode(), "host fallback");
    }
    EXPECT_NE(k.mem->report().find("device memory " + k.mem->device_memory_mode()),
              std::string::npos)
        << k.mem->report();
    EXPECT_EQ(k.compute->device_memory_mode(), "none");
    exercise_device_memory(*k.compute, dm);
    // The compute node learnt where node 0 keeps it when it connected.
    EXPECT_EQ(k.compute->device_memory_mode(0), k.mem->device_memory_mode());
  }
  if (set) {
    EXPECT_EQ(fake_live_dms(), 0);  // ibv_free_dm
    set(0);
  }
}

TEST(VerbsDeviceMemory, HostFallbackIsReported) {
  std::string why;
  if (!verbs::device_available(&why)) GTEST_SKIP() << why;
  SetDeviceMemory set = fake_device_memory();
  if (set) set(0);  // the fake device: none, as Soft-RoCE
  // More than the device offers (nothing, on rxe and on the fake device): the fallback.
  uint64_t dm = 64 << 10;
  {
    verbs::Device probe(verbs::Options{});
    while (dm <= probe.device_memory_bytes()) dm *= 2;
  }
  DmCluster k(dm);
  EXPECT_EQ(k.mem->device_memory_mode(), "host fallback");
  const std::string r = k.mem->report();
  EXPECT_NE(r.find("device memory host fallback (" + std::to_string(dm) + " bytes: "),
            std::string::npos)
      << r;
  EXPECT_NE(r.find(k.mem->device().device_memory_bytes() ? "asked" : "has no device memory"),
            std::string::npos)
      << r;
  if (set) {
    EXPECT_EQ(fake_live_dms(), 0);
  }
  exercise_device_memory(*k.compute, dm);
  EXPECT_EQ(k.compute->device_memory_mode(0), "host fallback");
}

TEST(VerbsDeviceMemory, NoneWhenTheConfigGivesNone) {
  std::string why;
  if (!verbs::device_available(&why)) GTEST_SKIP() << why;
  DmCluster k(0);
  EXPECT_EQ(k.mem->device_memory_mode(), "none");
  verbs::Cluster::ThreadBinding bind(*k.compute, 0);
  VClient c(k.compute->endpoint(1, 0));
  uint64_t v = 0;
  EXPECT_THROW(c.read(GlobalAddress::device(0, 0), &v, 8), AddressError);
  EXPECT_THROW(c.alloc_device_memory(0, 8), PoolExhausted);
}

}  // namespace
}  // namespace dmrt
