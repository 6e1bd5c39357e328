// Idle threads on shm: a thread whose fibers only wait sleeps on a futex until a message is sent,
// or, on a pool that may span hosts, polls with a bounded backoff.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <ctime>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/cluster.h"

namespace dmrt::shm {

// Two 32-bit words in node 0's header (layout::kIdleBellOffset + 64 x bell), so every process of
// a pool shares them: a sequence that a sender bumps, and futex-wakes, when some thread sleeps,
// and the number of threads about to sleep or sleeping. Senders pay one fence and one load while
// nobody sleeps. A sleeper announces itself (arm), lets each of its fibers look at what it waits
// for once more, and only then sleeps on the sequence it read when it armed: a message sent after
// the announcement either is seen by that last look or bumps the sequence (Dekker: the sender's
// message store then its load of the count, the sleeper's count increment then its loads of the
// mailboxes, each pair ordered by a full fence), so no wake-up is lost. Waits that no message
// ends (a word another thread will change) end by the sleep's timeout.
//
// Bells: kAnyBell rings for every message; kMemoryBell for messages to any memory node (the
// services of one host share a thread across nodes); one per compute node (modulo kBells - 2), so
// that an answer to a client does not wake the servers, nor the threads of other compute nodes.
class IdleBell {
 public:
  static constexpr unsigned kBells = 32, kAnyBell = 0, kMemoryBell = 1;
  static constexpr uint64_t kStride = 64;  // bytes: a cache line each
  static unsigned of_node(NodeId node, NodeRole role) {
    return role == NodeRole::kMemory ? kMemoryBell : 2 + node % (kBells - 2);
  }

  IdleBell() = default;
  explicit IdleBell(std::byte* words) : words_(reinterpret_cast<uint32_t*>(words)) {}

  // After a message was published: wakes the sleepers, if any.
  // `fenced`: the caller already fenced after the message (a second bell of the same message).
  void ring(bool fenced = false) const {
    if (!fenced) std::atomic_thread_fence(std::memory_order_seq_cst);
    if (waiters().load(std::memory_order_relaxed) == 0) return;
    seq().fetch_add(1, std::memory_order_release);
    syscall(SYS_futex, words_, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
  // Announces a sleeper; returns the sequence to sleep on.
  uint32_t arm() const {
    waiters().fetch_add(1, std::memory_order_seq_cst);
    return seq().load(std::memory_order_acquire);
  }
  void disarm() const { waiters().fetch_sub(1, std::memory_order_relaxed); }
  bool operator==(const IdleBell& o) const { return words_ == o.words_; }
  // Sleeps until the sequence moves from `seen` or `timeout_ns` passes (returns at once when it
  // already moved).
  void sleep(uint32_t seen, uint64_t timeout_ns) const {
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                static_cast<long>(timeout_ns % 1'000'000'000)};
    syscall(SYS_futex, words_, FUTEX_WAIT, seen, &ts, nullptr, 0);
  }

 private:
  std::atomic_ref<uint32_t> seq() const { return std::atomic_ref<uint32_t>(words_[0]); }
  std::atomic_ref<uint32_t> waiters() const { return std::atomic_ref<uint32_t>(words_[1]); }
  uint32_t* words_ = nullptr;
};

// What the fibers of this OS thread did since one of them last made progress (ran a verb, sent
// or received a message): how many pauses in a row, and whether the thread announced that it is
// about to sleep. One per thread, because the thread, not a fiber, is what sleeps.
struct IdleThread {
  // Pauses in a row before the thread arms, and after that before it sleeps: the second must
  // cover one pause of every fiber of the thread (each then looks at what it waits for once
  // more). A thread with more fibers than that may sleep without every last look; the timeout
  // bounds what that costs. Arming only after 256 pauses (tens of microseconds of polling, not a
  // few) keeps a thread awake through the usual wait for an answer: on a 2-vCPU guest a futex
  // wake-up costs more than that, and HStore's YCSB A (two client threads and the servers' thread
  // on two cores, every write waiting for two server hops) ran 15% faster, median of 8
  // interleaved runs (1.03 -> 1.18 Mops); the other indexes' YCSB A moved within +-5%.
  static constexpr uint32_t kArmAfter = 256, kRecheck = 64;
  static constexpr uint64_t kSleepNs = 100'000;

  // Polling instead (a pool from a device or file, Pool::polling_waits: its processes may be on
  // other hosts, which no futex reaches): after kArmAfter pauses in a row the thread sleeps once
  // per kRecheck pauses (a round of its fibers' looks), 1 us first, doubling up to kSleepNs. So a
  // message or word a waiting fiber wants is seen at most kSleepNs after it appears, plus the
  // kernel's timer slack (50 us by default, which also rounds the first short sleeps up), plus
  // one round of the thread's fibers; the first kArmAfter pauses after any progress never sleep.
  static constexpr uint64_t kFirstPollNs = 1'000;

  uint64_t pauses = 0;
  uint64_t poll_ns = 0;  // the last polling sleep (0: none since progress)
  uint32_t streak = 0;
  uint32_t seen = 0;
  // The bell the fibers pausing in this streak wait on: their home's, or kAnyBell when their
  // homes differ.
  IdleBell want;
  bool armed = false;  // want is armed

  void progress() {
    streak = 0;
    poll_ns = 0;
    if (armed) {
      want.disarm();
      armed = false;
    }
  }
  // `home` is the pausing fiber's bell, `any` the bell every message rings.
  void pause(const IdleBell& home, const IdleBell& any) {
    if (++streak == 1 || (!armed && !(want == home))) want = streak == 1 ? home : any;
    if (streak == kArmAfter) {
      armed = true;
      seen = want.arm();
    } else if (streak >= kArmAfter + kRecheck && armed) {
      want.sleep(seen, kSleepNs);
      progress();
      // Woken by a message, its receiver makes progress; after a timeout, arm again at once.
      streak = kArmAfter - 1;
    }
  }
  // The polling pause (above): sleeps when a round of looks since the last sleep found nothing.
  void pause_polling() {
    if (++streak < kArmAfter + kRecheck) return;
    streak = kArmAfter;
    poll_ns = poll_ns ? std::min(2 * poll_ns, kSleepNs) : kFirstPollNs;
    timespec ts{0, static_cast<long>(poll_ns)};
    nanosleep(&ts, nullptr);
  }
};

inline IdleThread& idle_thread() {
  static thread_local IdleThread t;
  return t;
}

}  // namespace dmrt::shm
