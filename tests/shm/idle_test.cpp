// shm's idle threads: a thread whose fibers only wait sleeps on its bell, and a message wakes it
// (dmrt/policies/shm/idle.h). Asserted on the bell's words, never on time.
#include "dmrt/policies/shm/idle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt {
namespace {

std::shared_ptr<shm::Pool> idle_pool() {
  return shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{64} << 20, uint64_t{8} << 20));
}

shm::IdleBell idle_bell(const shm::Pool& pool, unsigned i) {
  return shm::IdleBell(pool.region(0).base + layout::kIdleBellOffset + shm::IdleBell::kStride * i);
}

// The bell's two words as the sleepers see them: the sequence and the count of armed threads.
uint32_t idle_word(const shm::Pool& pool, unsigned bell, unsigned word) {
  uint32_t v;
  std::memcpy(
      &v, pool.region(0).base + layout::kIdleBellOffset + shm::IdleBell::kStride * bell + 4 * word,
      4);
  return v;
}

TEST(ShmIdleBell, RingMovesTheSequenceOnlyWhenSomeoneArmed) {
  auto pool = idle_pool();
  const shm::IdleBell bell = idle_bell(*pool, 5);
  const uint32_t s0 = bell.arm();
  bell.disarm();
  bell.ring();  // nobody armed: no wake-up, no syscall
  EXPECT_EQ(idle_word(*pool, 5, 0), s0);
  const uint32_t s1 = bell.arm();
  EXPECT_EQ(s1, s0);
  EXPECT_EQ(idle_word(*pool, 5, 1), 1u);
  bell.ring();
  EXPECT_EQ(idle_word(*pool, 5, 0), s1 + 1);
  bell.sleep(s1, 60'000'000'000ull);  // returns at once: the sequence moved (else a minute)
  bell.disarm();
  EXPECT_EQ(idle_word(*pool, 5, 1), 0u);
}

TEST(ShmIdleBell, BellsByRole) {
  EXPECT_EQ(shm::IdleBell::of_node(0, NodeRole::kMemory), shm::IdleBell::kMemoryBell);
  EXPECT_EQ(shm::IdleBell::of_node(7, NodeRole::kMemory), shm::IdleBell::kMemoryBell);
  EXPECT_EQ(shm::IdleBell::of_node(1, NodeRole::kCompute), 3u);
  EXPECT_EQ(shm::IdleBell::of_node(31, NodeRole::kCompute), 3u);  // 2 + 31 % 30
}

// Two fibers of one thread wait (one for a message, one for a flag the first sets): the thread
// arms its compute node's bell and sleeps; a message sent once it armed bumps that bell's
// sequence (the wake-up) and is received. Node 1 is the compute node.
//
// A sleeper that times out (IdleThread::kSleepNs) disarms and arms again at its next pause, so a
// send can fall between the two: the message is then found by the thread's own look, and the
// bell is not rung. That window is a few instructions wide, but a slow build (ASan) hit it once
// in a fresh-clone CI run. So the test runs the exchange until one send rings the armed bell (at
// most 20 times), and checks every exchange's message and disarm.
bool wake_once(const std::shared_ptr<shm::Pool>& pool, unsigned home, uint32_t tag) {
  const uint32_t seq0 = idle_word(*pool, home, 0);
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    Scheduler s({1, 2});
    s.run([&](const WorkerId& w) {
      Client<ShmTransport> c(shm::Endpoint(pool, 1, w.fiber));
      if (w.fiber == 0) {
        Message m = c.receive(3);
        EXPECT_EQ(m.tag, tag);
        got = true;
      } else {
        while (!got) c.pause();
      }
    });
  });
  // Wait until the waiting thread armed its bell (it then sleeps or is about to).
  while (idle_word(*pool, home, 1) == 0) std::this_thread::yield();
  Client<ShmTransport> sender(shm::Endpoint(pool, 0, 100));
  const std::byte payload[8]{};
  sender.send(1, 3, tag, payload);
  waiter.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(idle_word(*pool, home, 1), 0u);  // the thread disarmed when it woke
  return idle_word(*pool, home, 0) != seq0;  // the send rang the armed bell
}

TEST(ShmIdleBell, AnIdleThreadSleepsAndAMessageWakesIt) {
  auto pool = idle_pool();
  const unsigned home = shm::IdleBell::of_node(1, NodeRole::kCompute);
  bool rang = false;
  for (uint32_t i = 0; i < 20 && !rang && !HasFailure(); ++i) rang = wake_once(pool, home, 42 + i);
  EXPECT_TRUE(rang) << "no send of 20 rang the armed bell";
}

}  // namespace
}  // namespace dmrt
