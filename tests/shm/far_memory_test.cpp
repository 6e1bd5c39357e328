// shm's far-memory model: completion times on explicit clocks (exact), then on the transport
// clock through the Endpoint (never before the modelled time; queueing; the fiber yields).
#include "dmrt/policies/shm/far_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt {
namespace {

using FarClient = Client<ShmTransport>;

// One memory node (0) with `cost`, one compute node (1).
ClusterConfig far_config(FarMemoryCost cost) {
  ClusterConfig c = ClusterConfig::embedded(1, 1, uint64_t{64} << 20, uint64_t{8} << 20);
  c.nodes[0].far = cost;
  return c;
}

// The first heap byte of node n: memory no one else uses in these tests.
GlobalAddress far_heap(const shm::Pool& pool, NodeId n) {
  return {n, layout::heap_start(pool.config().mailbox)};
}

TEST(FarMemoryModel, LatencyOnlyHasNoQueue) {
  shm::FarMemory far(far_config({300, 0}), 0);
  ASSERT_TRUE(far.models(0));
  EXPECT_FALSE(far.models(1));
  // However many round trips and bytes arrive together, each takes the latency.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(far.post(0, 1000, 1 << 20), 1300u);
  EXPECT_EQ(far.post(0, 5, 64), 305u);
  EXPECT_EQ(far.stats(0).round_trips, 0u);  // no link state without bandwidth
}

TEST(FarMemoryModel, RoundTripsQueueForTheLinkInPostOrder) {
  // 8 Gbit/s: one byte per ns. Five 64-byte round trips posted at t = 1000 leave one after the
  // other: the k-th completes at 1000 + 64 k + latency.
  shm::FarMemory far(far_config({100, 8.0}), 0);
  for (uint64_t k = 1; k <= 5; ++k) EXPECT_EQ(far.post(0, 1000, 64), 1000 + 64 * k + 100);
  // Posted while the link is still busy (until 1320): it waits for it.
  EXPECT_EQ(far.post(0, 1200, 128), 1320 + 128 + 100);
  // Posted after the link went idle: no wait.
  EXPECT_EQ(far.post(0, 5000, 64), 5000 + 64 + 100);
  shm::FarMemory::LinkStats s = far.stats(0);
  EXPECT_EQ(s.round_trips, 7u);
  EXPECT_EQ(s.bytes, 5 * 64 + 128 + 64u);
  EXPECT_EQ(s.busy_ps, (5 * 64 + 128 + 64) * 1000u);
  // Queued: 0 + 64 + 128 + 192 + 256 ns for the first five, 120 ns for the sixth.
  EXPECT_EQ(s.queued_ps, (64 + 128 + 192 + 256 + 120) * 1000u);
}

TEST(FarMemoryModel, FractionsOfANanosecondAddUpExactly) {
  // 256 Gbit/s: a 64-byte line takes 2 ns; 80 bytes take 2.5 ns. Posts at one instant queue
  // exactly, and a completion time is rounded up to the next whole ns.
  shm::FarMemory far(far_config({300, 256.0}), 0);
  EXPECT_EQ(far.post(0, 0, 80), 303u);  // 2.5 ns -> 3
  EXPECT_EQ(far.post(0, 0, 80), 305u);  // 5 ns
  uint64_t last = 0;
  for (int i = 0; i < 1000; ++i) last = far.post(0, 0, 64);
  EXPECT_EQ(last, 5 + 2000 + 300u);
}

TEST(FarMemoryModel, EpochAndClockBeforeIt) {
  // Links count from the epoch; a clock reading before it counts as the epoch.
  shm::FarMemory far(far_config({50, 8.0}), 1'000'000);
  EXPECT_EQ(far.post(0, 1'000'000, 10), 1'000'060u);
  EXPECT_EQ(far.post(0, 10, 10), 1'000'070u);  // queued behind the first
}

TEST(FarMemoryModel, LinkBytesAreWholeLines) {
  EXPECT_EQ(shm::FarMemory::lines_touched(0, 0), 0u);
  EXPECT_EQ(shm::FarMemory::lines_touched(0, 8), 1u);
  EXPECT_EQ(shm::FarMemory::lines_touched(56, 8), 1u);
  EXPECT_EQ(shm::FarMemory::lines_touched(60, 8), 2u);
  EXPECT_EQ(shm::FarMemory::lines_touched(64, 64), 1u);
  EXPECT_EQ(shm::FarMemory::lines_touched(1, 128), 3u);
  uint64_t buf[32], old;
  Batch b;
  b.read(GlobalAddress(0, 4096), buf, 256).cas(GlobalAddress(0, 8192), 0, 1, &old);
  b.write(GlobalAddress(0, 4100), buf, 100);  // 4100..4199: two lines
  EXPECT_EQ(shm::FarMemory::link_bytes(b), (4 + 1 + 2) * 64u);
}

TEST(FarMemoryModel, PoolBuildsItOnlyForACost) {
  auto plain = shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{64} << 20, 8 << 20));
  EXPECT_EQ(plain->far_memory(), nullptr);
  EXPECT_EQ(plain->round_trip_hooks(), 0);
  auto pool = shm::Pool::create(far_config({300, 256.0}));
  ASSERT_NE(pool->far_memory(), nullptr);
  EXPECT_TRUE(pool->round_trip_hooks() & shm::Pool::kFarMemory);
  EXPECT_EQ(pool->far_memory()->cost(0), (FarMemoryCost{300, 256.0}));
  EXPECT_FALSE(pool->far_memory()->models(1));
}

// --- on the transport clock, through the Endpoint -----------------------------------------------

TEST(FarMemoryEndpoint, NoRoundTripCompletesBeforeItsModelledTime) {
  constexpr uint64_t kLatency = 20'000;  // 20 us, far above this machine's DRAM
  auto pool = shm::Pool::create(far_config({kLatency, 8.0}));
  FarClient c(shm::Endpoint(pool, 1, 0));
  GlobalAddress a = c.alloc(4096);
  std::vector<uint64_t> data(512, 7), back(512);
  for (int i = 0; i < 20; ++i) {
    uint32_t len = 64u << (i % 7);  // 64 B .. 4 KiB: the link time grows with the size
    uint64_t before = c.now_ns();
    c.write(a, data.data(), len);
    c.read(a, back.data(), len);
    uint64_t after = c.now_ns();
    uint64_t due = c.endpoint().last_due_ns();
    // The READ's modelled time: it left no earlier than `before`, waited for nothing (this is
    // the only client, and the WRITE had finished), took len ns of link (8 Gbit/s) and the
    // latency.
    EXPECT_GE(due, before + len + kLatency);
    EXPECT_GE(after, due);
    EXPECT_GE(after - before, 2 * (kLatency + len));  // the WRITE, then the READ
    EXPECT_EQ(back[len / 8 - 1], 7u);
  }
  EXPECT_EQ(pool->far_memory()->stats(0).round_trips, 40u + 1);  // + the allocator's FAA
}

TEST(FarMemoryEndpoint, OwnNodeAndUnmodelledNodesCostNothing) {
  auto pool = shm::Pool::create(far_config({1'000'000'000, 0}));  // one second: would show
  // A compute client's local access to its own node.
  FarClient c(shm::Endpoint(pool, 1, 0));
  uint64_t v = 5;
  uint64_t before = c.now_ns();
  c.write(far_heap(*pool, 1), &v, 8);
  c.faa(far_heap(*pool, 1), 1);  // an atomic to its own node: loopback, still not far
  EXPECT_EQ(c.endpoint().last_due_ns(), 0u);
  // A client homed on the memory node (a memory-node service) reaches its own memory.
  FarClient s(shm::Endpoint(pool, 0, 1));
  s.faa(far_heap(*pool, 0), 1);
  EXPECT_EQ(s.endpoint().last_due_ns(), 0u);
  EXPECT_LT(c.now_ns() - before, 500'000'000u);
  EXPECT_EQ(c.read_value<uint64_t>(far_heap(*pool, 1)), 6u);
}

TEST(FarMemoryEndpoint, TheWaitingFiberLetsTheOthersRun) {
  // One thread, two fibers: while fiber 0 waits for its 5 ms round trip, fiber 1 runs all of
  // its work (round-robin scheduling: fiber 0's first yield hands the thread to fiber 1).
  auto pool = shm::Pool::create(far_config({5'000'000, 0}));
  bool waiting = false, ran_while_waiting = false;
  Scheduler sched({1, 2});
  sched.run([&](const WorkerId& w) {
    FarClient c(shm::Endpoint(pool, 1, w.index));
    uint64_t v = 0;
    if (w.fiber == 0) {
      waiting = true;
      c.read(far_heap(*pool, 0), &v, 8);
      waiting = false;
    } else {
      c.write(far_heap(*pool, 1), &v, 8);  // local: no wait
      ran_while_waiting = waiting;
    }
  });
  EXPECT_TRUE(ran_while_waiting);
}

TEST(FarMemoryEndpoint, ClientsOfSeveralThreadsShareOneLink) {
  // 1 Gbit/s: a 512-byte READ holds the link for 4,096 ns. 2 threads x 4 fibers x 25 READs all
  // pass through it one after another, so the last completes at least 200 x 4,096 ns after the
  // first was posted, and every one at least its transfer and latency after its own post.
  constexpr uint64_t kLatency = 1000, kXfer = 4096, kTrips = 2 * 4 * 25;
  auto pool = shm::Pool::create(far_config({kLatency, 1.0}));
  struct Trip {
    uint64_t post, due, done;
  };
  std::vector<std::vector<Trip>> trips(8);
  Scheduler sched({2, 4});
  sched.run([&](const WorkerId& w) {
    FarClient c(shm::Endpoint(pool, 1, w.index));
    std::byte buf[512];
    for (int i = 0; i < 25; ++i) {
      uint64_t post = c.now_ns();
      c.read(far_heap(*pool, 0) + 4096 * w.index, buf, 512);
      trips[w.index].push_back({post, c.endpoint().last_due_ns(), c.now_ns()});
    }
  });
  uint64_t first_post = ~0ull, last_due = 0;
  std::vector<uint64_t> dues;
  for (const auto& t : trips)
    for (const Trip& r : t) {
      EXPECT_GE(r.due, r.post + kXfer + kLatency);
      EXPECT_GE(r.done, r.due);
      first_post = std::min(first_post, r.post);
      last_due = std::max(last_due, r.due);
      dues.push_back(r.due);
    }
  EXPECT_GE(last_due - first_post, kTrips * kXfer + kLatency);
  // First come, first served: no two round trips share a slot of the link.
  std::sort(dues.begin(), dues.end());
  for (size_t i = 1; i < dues.size(); ++i) EXPECT_GE(dues[i] - dues[i - 1], kXfer);
  shm::FarMemory::LinkStats s = pool->far_memory()->stats(0);
  EXPECT_EQ(s.round_trips, kTrips);
  EXPECT_EQ(s.bytes, kTrips * 512);
  EXPECT_EQ(s.busy_ps, kTrips * kXfer * 1000);
}

}  // namespace
}  // namespace dmrt
