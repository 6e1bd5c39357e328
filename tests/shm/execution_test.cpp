// shm's prefetch execution: the same verbs, results, order and counts as inline execution; the
// fiber gives up the thread between prefetch and perform. And the endpoint's coarse clock.
#include "dmrt/policies/shm/execution.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt {
namespace {

using ExecClient = Client<ShmTransport>;

std::shared_ptr<shm::Pool> exec_pool(shm::Execution e, FarMemoryCost far = {}) {
  ClusterConfig c = ClusterConfig::embedded(1, 1, uint64_t{64} << 20, uint64_t{8} << 20);
  c.nodes[0].far = far;
  auto pool = shm::Pool::create(c);
  pool->set_execution(e);
  return pool;
}

// What one mixed batch leaves behind: the results it returned, the memory, the counters.
struct Outcome {
  std::vector<uint64_t> results;
  std::vector<uint64_t> memory;
  VerbCounters counters;
};

// The first heap byte of node n: memory no one else uses in these tests.
GlobalAddress exec_heap(const shm::Pool& pool, NodeId n) {
  return {n, layout::heap_start(pool.config().mailbox)};
}

Outcome run_mixed_batch(shm::Execution e, shm::Coherence coherence = shm::Coherence::kNone,
                        uint64_t* invalidated = nullptr, uint64_t* written_back = nullptr) {
  auto pool = exec_pool(e);
  pool->set_coherence(coherence);
  ExecClient c(shm::Endpoint(pool, 1, 0));
  const GlobalAddress a = exec_heap(*pool, 0);
  std::vector<uint64_t> init(16);
  for (size_t i = 0; i < init.size(); ++i) init[i] = 100 + i;
  c.write(a, init.data(), 128);
  c.counters() = {};
  c.counters().by_node.resize(c.node_count());

  Outcome o;
  o.results.resize(12);
  uint64_t w[2] = {7, 8};
  uint64_t* r = o.results.data();
  Batch b;
  // Later verbs observe earlier ones (RC order), in both modes.
  b.write(a, w, 16)                                           // words 0, 1 = 7, 8
      .read(a, r + 0, 16)                                     // sees 7, 8
      .cas(a + 16, 102, 200, r + 2)                           // succeeds: word 2 = 200
      .cas(a + 24, 0, 1, r + 3)                               // fails: word 3 stays 103
      .faa(a + 16, 5, r + 4)                                  // 200 -> 205
      .masked_cas(a + 32, 0x64, 0xff, 0xab00, 0xff00, r + 5)  // 104 = 0x68 != 0x64: fails
      .masked_cas(a + 40, 0x69, 0xff, 0xab00, 0xff00, r + 6)  // 105 = 0x69: succeeds
      .read(a + 16, r + 7, 40)                                // words 2..6 after all that
      .write(a + 61, w, 5);                                   // unaligned: bytes 61..65 only
  const uint64_t inval0 = pool->coherence_stats().invalidated();
  const uint64_t wb0 = pool->coherence_stats().written_back();
  c.run(b);
  if (invalidated) *invalidated = pool->coherence_stats().invalidated() - inval0;
  if (written_back) *written_back = pool->coherence_stats().written_back() - wb0;
  o.memory.resize(16);
  c.read(a, o.memory.data(), 128);
  o.counters = c.counters().total;
  return o;
}

// HStore's GET starts its grace check on the coarse clock and ends it on the precise one: that is
// only sound if a coarse read is never ahead of a precise read made after it.
TEST(ShmClock, CoarseReadIsNeverAheadOfALaterPreciseRead) {
  auto pool = exec_pool(shm::Execution::kInline);
  ExecClient c(shm::Endpoint(pool, 0, 0));
  const uint64_t tick = c.coarse_tick_ns();
  EXPECT_GT(tick, 0u);  // Linux has CLOCK_MONOTONIC_COARSE: a tick of 1-10 ms (HZ)
  EXPECT_LE(tick, uint64_t{1'000'000'000});
  for (int i = 0; i < 200'000; ++i) {
    const uint64_t coarse = c.coarse_now_ns();
    ASSERT_LE(coarse, c.now_ns()) << "read " << i;
  }
}

TEST(ShmExecution, PrefetchGivesTheSameResultsMemoryAndCounts) {
  Outcome in = run_mixed_batch(shm::Execution::kInline);
  Outcome pf = run_mixed_batch(shm::Execution::kPrefetch);
  EXPECT_EQ(in.results, pf.results);
  EXPECT_EQ(in.memory, pf.memory);
  // The expected values, so that both modes are also right and not only equal.
  EXPECT_EQ(pf.results[0], 7u);
  EXPECT_EQ(pf.results[1], 8u);
  EXPECT_EQ(pf.results[2], 102u);
  EXPECT_EQ(pf.results[3], 103u);
  EXPECT_EQ(pf.results[4], 200u);
  EXPECT_EQ(pf.results[5], 104u);
  EXPECT_EQ(pf.results[6], 105u);
  EXPECT_EQ(pf.results[7], 205u);
  EXPECT_EQ(pf.results[8], 103u);
  EXPECT_EQ(pf.results[9], 104u);
  EXPECT_EQ(pf.results[10], (105u & ~0xff00ull) | 0xab00u);
  EXPECT_EQ(pf.memory[2], 205u);
  for (const Outcome* o : {&in, &pf}) {
    EXPECT_EQ(o->counters.round_trips, 2u);  // the batch and the read-back
    EXPECT_EQ(o->counters.count(VerbKind::kRead), 3u);
    EXPECT_EQ(o->counters.count(VerbKind::kMaskedCas), 2u);
    EXPECT_EQ(o->counters.emulated_masked_cas, 2u);
    EXPECT_EQ(o->counters.bytes_read, in.counters.bytes_read);
    EXPECT_EQ(o->counters.bytes_written, in.counters.bytes_written);
  }
  // The unaligned WRITE merged bytes 61..63 of word 7 and 64..65 of word 8, nothing else.
  uint64_t w7 = 107, w8 = 108, seven = 7;
  std::memcpy(reinterpret_cast<std::byte*>(&w7) + 5, &seven, 3);
  std::memcpy(&w8, reinterpret_cast<std::byte*>(&seven) + 3, 2);
  EXPECT_EQ(pf.memory[7], w7);
  EXPECT_EQ(pf.memory[8], w8);
}

// The coherence mode (dmrt/policies/shm/coherence.h) flushes around the verbs and changes nothing
// they do; it invalidates each line a READ or an atomic loads and writes back each line a WRITE
// or an atomic stores, once per verb.
TEST(ShmCoherence, FlushGivesTheSameResultsMemoryAndCountsAndCountsItsLines) {
  Outcome in = run_mixed_batch(shm::Execution::kInline);
  for (shm::Execution e : {shm::Execution::kInline, shm::Execution::kPrefetch}) {
    uint64_t invalidated = 0, written_back = 0;
    Outcome fl = run_mixed_batch(e, shm::Coherence::kFlush, &invalidated, &written_back);
    EXPECT_EQ(in.results, fl.results);
    EXPECT_EQ(in.memory, fl.memory);
    EXPECT_EQ(in.counters.round_trips, fl.counters.round_trips);
    EXPECT_EQ(in.counters.bytes_read, fl.counters.bytes_read);
    EXPECT_EQ(in.counters.bytes_written, fl.counters.bytes_written);
    // The heap starts on a line: every verb of the batch is inside line 0, except the 5-byte
    // WRITE at byte 61, which spans lines 0 and 1. Loads: 2 READs, 2 CAS, 1 FAA, 2 masked CAS.
    // Stores: 2 WRITEs (1 + 2 lines) and the 5 atomics.
    EXPECT_EQ(invalidated, 7u);
    EXPECT_EQ(written_back, 8u);
  }
}

TEST(ShmCoherence, LocalVerbsAreNotFlushed) {
  auto pool = exec_pool(shm::Execution::kInline);
  pool->set_coherence(shm::Coherence::kFlush);
  EXPECT_EQ(pool->coherence(), shm::Coherence::kFlush);
  ExecClient home(shm::Endpoint(pool, 0, 0));  // node 0's own memory
  ExecClient far(shm::Endpoint(pool, 1, 1));
  const GlobalAddress a = exec_heap(*pool, 0);
  uint64_t v[16] = {};
  home.write(a, v, 128);
  home.read(a, v, 128);
  EXPECT_EQ(pool->coherence_stats().invalidated(), 0u);
  EXPECT_EQ(pool->coherence_stats().written_back(), 0u);
  far.write(a + 8, v, 128);  // bytes 8..135: lines 0, 1 and 2
  far.read(a, v, 64);
  EXPECT_EQ(pool->coherence_stats().written_back(), 3u);
  EXPECT_EQ(pool->coherence_stats().invalidated(), 1u);
  EXPECT_EQ(shm::parse_coherence("flush"), shm::Coherence::kFlush);
  EXPECT_THROW(shm::parse_coherence("clwb"), ConfigError);
}

TEST(ShmExecution, PrefetchYieldsBetweenPrefetchAndPerform) {
  // One thread, two fibers. Fiber 0 reads a word that fiber 1 stores to directly (a CPU store,
  // no round trip). Inline, fiber 0's READ is performed before fiber 1 ever runs; with prefetch,
  // fiber 0 yields after prefetching, fiber 1 stores, and fiber 0's READ (performed when it runs
  // again) sees the new value.
  for (shm::Execution e : {shm::Execution::kInline, shm::Execution::kPrefetch}) {
    auto pool = exec_pool(e);
    const GlobalAddress a = exec_heap(*pool, 0);
    uint64_t seen = 0;
    bool reader_in_round_trip = false, overlapped = false;
    Scheduler sched({1, 2});
    sched.run([&](const WorkerId& w) {
      ExecClient c(shm::Endpoint(pool, 1, w.index));
      if (w.fiber == 0) {
        reader_in_round_trip = true;
        seen = c.read_value<uint64_t>(a);
        reader_in_round_trip = false;
      } else {
        overlapped = reader_in_round_trip;
        local::store_word(c.endpoint().translate(a, 8), 42);
      }
    });
    const bool prefetch = e == shm::Execution::kPrefetch;
    EXPECT_EQ(overlapped, prefetch) << shm::execution_name(e);
    EXPECT_EQ(seen, prefetch ? 42u : 0u) << shm::execution_name(e);
  }
}

// An anonymous pool is private memory on transparent huge pages where the kernel allows them
// (2 MiB aligned, fully usable); a named pool stays shared memory that others can attach.
TEST(ShmPoolPages, AnonymousPoolIsOnHugePagesWhereAllowedNamedPoolIsShared) {
  ClusterConfig c = ClusterConfig::embedded(1, 1, uint64_t{64} << 20, uint64_t{8} << 20);
  auto pool = shm::Pool::create(c);
  const bool thp = shm::Pool::anonymous_thp_available();
  EXPECT_EQ(pool->pages(), thp ? "thp" : "4k");
  for (NodeId n = 0; n < pool->node_count(); ++n) {
    if (thp) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(pool->region(n).base) % (uint64_t{2} << 20), 0u);
    }
    // The last word of the region is mapped and starts zero, as a fresh memfd's.
    std::byte* last = pool->region(n).base + pool->region(n).bytes - 8;
    uint64_t w = 1;
    std::memcpy(&w, last, 8);
    EXPECT_EQ(w, 0u);
  }
  ExecClient cl(shm::Endpoint(pool, 1, 0));
  const GlobalAddress a = exec_heap(*pool, 0);
  cl.write(a, "hugepage", 8);
  char back[8] = {};
  cl.read(a, back, 8);
  EXPECT_EQ(std::memcmp(back, "hugepage", 8), 0);

  const std::string name = "pages" + std::to_string(getpid());
  auto named = shm::Pool::create(c, name);
  EXPECT_EQ(named->pages(), "4k");
  auto attached = shm::Pool::attach(name);
  ExecClient w1(shm::Endpoint(named, 1, 0)), r1(shm::Endpoint(attached, 1, 1));
  const GlobalAddress b = exec_heap(*named, 0);
  w1.write(b, "attached", 8);
  r1.read(b, back, 8);
  EXPECT_EQ(std::memcmp(back, "attached", 8), 0);
}

TEST(ShmExecution, ModeIsAPoolSetting) {
  auto pool = exec_pool(shm::Execution::kInline);
  EXPECT_EQ(pool->execution(), shm::Execution::kInline);
  EXPECT_EQ(pool->round_trip_hooks(), 0);
  pool->set_execution(shm::Execution::kPrefetch);
  EXPECT_EQ(pool->execution(), shm::Execution::kPrefetch);
  EXPECT_EQ(pool->round_trip_hooks(), shm::Pool::kPrefetch);
  pool->set_yield_per_round_trip(true);
  EXPECT_EQ(pool->execution(), shm::Execution::kPrefetch);
  EXPECT_EQ(shm::parse_execution("inline"), shm::Execution::kInline);
  EXPECT_EQ(shm::parse_execution("prefetch"), shm::Execution::kPrefetch);
  EXPECT_THROW(shm::parse_execution("eager"), ConfigError);
}

TEST(ShmExecution, BadAddressesThrowAsInline) {
  auto pool = exec_pool(shm::Execution::kPrefetch);
  ExecClient c(shm::Endpoint(pool, 1, 0));
  uint64_t v = 0;
  EXPECT_THROW(c.read(GlobalAddress(0, (uint64_t{64} << 20) - 4), &v, 8), AddressError);
  Batch b;
  b.read(exec_heap(*pool, 0), &v, 8).read(GlobalAddress(0, uint64_t{1} << 40), &v, 8);
  EXPECT_THROW(c.run(b), AddressError);
}

TEST(ShmExecution, PrefetchPrefetchesEveryLineInBudget) {
  // prefetch_range walks whole lines from the first touched to the last, within the budget.
  alignas(64) static std::byte area[64 * 80];
  unsigned budget = 100;
  shm::prefetch_range(area + 60, 8, false, budget);  // lines 0 and 1
  EXPECT_EQ(budget, 98u);
  shm::prefetch_range(area + 128, 0, true, budget);  // nothing
  EXPECT_EQ(budget, 98u);
  shm::prefetch_range(area, 64 * 80, true, budget);  // 80 lines, 98 left
  EXPECT_EQ(budget, 18u);
  shm::prefetch_range(area, 64 * 80, false, budget);  // stops at the budget
  EXPECT_EQ(budget, 0u);
}

TEST(ShmExecution, PrefetchWaitsForTheFarMemoryModelToo) {
  constexpr uint64_t kLatency = 50'000;
  auto pool = exec_pool(shm::Execution::kPrefetch, {kLatency, 0});
  ExecClient c(shm::Endpoint(pool, 1, 0));
  for (int i = 0; i < 10; ++i) {
    uint64_t before = c.now_ns();
    c.faa(exec_heap(*pool, 0), 1);
    EXPECT_GE(c.endpoint().last_due_ns(), before + kLatency);
    EXPECT_GE(c.now_ns(), c.endpoint().last_due_ns());
  }
  EXPECT_EQ(c.read_value<uint64_t>(exec_heap(*pool, 0)), 10u);
}

}  // namespace
}  // namespace dmrt
