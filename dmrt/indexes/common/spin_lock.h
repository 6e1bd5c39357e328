// Spin locks for short compute-side critical sections that never suspend: the node cache's map
// lookups (reader-writer) and the RDWC slots (exclusive).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <thread>

#include "dmrt/indexes/common/striped.h"

namespace dmrt::btree {

namespace detail {
// Spins until done(), yielding the thread now and then in case the holder was preempted (the
// machines these run on are often oversubscribed).
template <class Done>
inline void spin_until(Done&& done) {
  for (unsigned spins = 0; !done(); ++spins)
    if (spins % 64 == 63) std::this_thread::yield();
}
}  // namespace detail

// A reader takes and drops it with one atomic add each on its thread's stripe (striped.h), where
// std::shared_mutex (pthread_rwlock) cost about 60 instructions a pair on every search's cache
// lookup (shm profile), and one shared reader count moved its cache line between the threads on
// every lookup. A writer sets the writer flag, then waits for every stripe to drain; readers that
// find the flag set step back until it clears (writer-preferring). The reader's add and the
// writer's flag are sequentially consistent, so either the reader sees the flag or the writer
// sees the reader. Only for critical sections that post no verb (a fiber never suspends holding
// it), so every wait is short.
class RwSpinLock {
 public:
  void lock_shared() {
    std::atomic<uint32_t>& mine = readers_[thread_stripe()].n;
    for (;;) {
      mine.fetch_add(1, std::memory_order_seq_cst);
      if (!writer_.load(std::memory_order_seq_cst)) return;
      mine.fetch_sub(1, std::memory_order_relaxed);
      detail::spin_until([&] { return !writer_.load(std::memory_order_relaxed); });
    }
  }
  // On the stripe lock_shared() added to: a fiber may not move threads while holding it.
  void unlock_shared() { readers_[thread_stripe()].n.fetch_sub(1, std::memory_order_release); }
  void lock() {
    while (writer_.exchange(true, std::memory_order_seq_cst))
      detail::spin_until([&] { return !writer_.load(std::memory_order_relaxed); });
    // Sequentially consistent like the reader's add and flag load (Dekker: an acquire load after
    // the exchange is not ordered after it by the language's rules, only by x86's). On x86 the
    // same plain load either way.
    for (const Stripe& s : readers_)  // drained
      detail::spin_until([&] { return s.n.load(std::memory_order_seq_cst) == 0; });
  }
  void unlock() { writer_.store(false, std::memory_order_release); }

 private:
  struct alignas(64) Stripe {
    std::atomic<uint32_t> n{0};
  };
  std::array<Stripe, kStripes> readers_{};
  alignas(64) std::atomic<bool> writer_{false};
};

// Exclusive: one exchange to take, one store to drop (std::mutex's pthread calls were about 110
// instructions a lock-unlock pair, two pairs on every RDWC search). Same rule: never held across
// a verb.
class SpinLock {
 public:
  void lock() {
    while (f_.exchange(true, std::memory_order_acquire))
      detail::spin_until([&] { return !f_.load(std::memory_order_relaxed); });
  }
  void unlock() { f_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> f_{false};
};

}  // namespace dmrt::btree
