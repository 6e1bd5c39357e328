// Spin locks for short compute-side critical sections that never suspend: the node cache's map
// lookups (reader-writer) and the RDWC slots (exclusive).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

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

// A reader takes and drops it with one atomic add each, where std::shared_mutex (pthread_rwlock)
// cost about 60 instructions a pair on every search's cache lookup (shm profile). A writer sets
// the writer bit, then waits for the readers to drain; readers that find the bit set step back
// until it clears (writer-preferring). Only for critical sections that post no verb (a fiber
// never suspends holding it), so every wait is short.
class RwSpinLock {
 public:
  void lock_shared() {
    for (;;) {
      if (!(s_.fetch_add(1, std::memory_order_acquire) & kWriter)) return;
      s_.fetch_sub(1, std::memory_order_relaxed);
      detail::spin_until([&] { return !(s_.load(std::memory_order_relaxed) & kWriter); });
    }
  }
  void unlock_shared() { s_.fetch_sub(1, std::memory_order_release); }
  void lock() {
    while (s_.fetch_or(kWriter, std::memory_order_acquire) & kWriter)
      detail::spin_until([&] { return !(s_.load(std::memory_order_relaxed) & kWriter); });
    detail::spin_until([&] { return s_.load(std::memory_order_acquire) == kWriter; });  // drained
  }
  void unlock() { s_.fetch_and(~kWriter, std::memory_order_release); }

 private:
  static constexpr uint32_t kWriter = uint32_t{1} << 31;
  std::atomic<uint32_t> s_{0};
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
