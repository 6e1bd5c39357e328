// shm's prefetch execution and coherence flushes under contention: CAS, FAA and masked CAS stay
// exact when every round trip of 2 threads x 8 fibers yields between its prefetch and its verbs,
// or is wrapped in cache-line flushes.
#include <gtest/gtest.h>

#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt {
namespace {

void expect_exact_atomics(shm::Execution e, shm::Coherence coherence) {
  auto pool =
      shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{64} << 20, uint64_t{8} << 20));
  pool->set_execution(e);
  pool->set_coherence(coherence);
  const GlobalAddress counter(0, layout::heap_start(pool->config().mailbox));
  const GlobalAddress sum = counter + 64, fields = counter + 128;
  constexpr unsigned kThreads = 2, kFibers = 8, kPer = 1500;
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& w) {
    Client<ShmTransport> c(shm::Endpoint(pool, 1, w.index));
    const unsigned shift = 4 * (w.index % 16);
    for (unsigned i = 0; i < kPer; ++i) {
      uint64_t cur = c.read_value<uint64_t>(counter);
      for (;;) {  // CAS increment
        uint64_t old = c.cas(counter, cur, cur + 1);
        if (old == cur) break;
        cur = old;
      }
      c.faa(sum, 3);
      // Masked CAS increment of this worker's own 4-bit field (mod 16).
      uint64_t word = c.read_value<uint64_t>(fields);
      for (;;) {
        uint64_t f = (word >> shift) & 0xf;
        uint64_t next = ((f + 1) & 0xf) << shift;
        uint64_t old =
            c.masked_cas(fields, word & (0xfull << shift), 0xfull << shift, next, 0xfull << shift);
        if (((old ^ word) & (0xfull << shift)) == 0) break;
        word = old;
      }
    }
  });
  Client<ShmTransport> c(shm::Endpoint(pool, 1, 99));
  EXPECT_EQ(c.read_value<uint64_t>(counter), uint64_t{kThreads} * kFibers * kPer);
  EXPECT_EQ(c.read_value<uint64_t>(sum), 3ull * kThreads * kFibers * kPer);
  uint64_t f = c.read_value<uint64_t>(fields);
  for (unsigned k = 0; k < 16; ++k) EXPECT_EQ((f >> (4 * k)) & 0xf, kPer % 16) << k;
}

TEST(ShmExecutionConcurrency, CasAndFaaAreExactInPrefetchMode) {
  expect_exact_atomics(shm::Execution::kPrefetch, shm::Coherence::kNone);
}

// The flushes and fences of the coherence mode around every atomic change none of them.
TEST(ShmExecutionConcurrency, CasAndFaaAreExactWithCoherenceFlushes) {
  expect_exact_atomics(shm::Execution::kInline, shm::Coherence::kFlush);
  expect_exact_atomics(shm::Execution::kPrefetch, shm::Coherence::kFlush);
}

}  // namespace
}  // namespace dmrt
