// Per-compute-node local lock table: queues a node's clients locally and hands a held remote lock
// over.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "runtime/address.h"
#include "runtime/hash.h"

namespace dmrt::btree {

// Sherman's hierarchical lock: before CASing a remote lock word, a client takes a local ticket
// lock for it (hashed slot). Clients of the same compute node therefore never contend on the
// remote word, and a releasing holder with local waiters keeps the remote lock and hands it to
// the next waiter (bounded streak, so other compute nodes are not starved). Slot collisions are
// harmless: a new owner that finds another address's lock still held releases it first.
//
// Shared by all threads and fibers of one compute node; waiting spins with the client's pause()
// (yield to other fibers), never blocks the OS thread.
class LocalLockTable {
 public:
  explicit LocalLockTable(size_t slots = 4096, uint32_t max_streak = 8)
      : slots_(std::make_unique<Slot[]>(slots)), n_(slots), max_streak_(max_streak) {}

  // Waits for the local slot of `lock`. Returns true when the remote lock was handed over (it
  // is already held for this compute node); false when the caller must take the remote lock.
  template <class C>
  bool acquire(C& c, GlobalAddress lock) {
    Slot& s = slot(lock);
    uint64_t t = s.next.fetch_add(1, std::memory_order_acq_rel);
    while (s.serving.load(std::memory_order_acquire) != t) c.pause();
    uint64_t held = s.held.load(std::memory_order_relaxed);
    if (held == lock.raw()) {
      handovers_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (held != 0) {  // a colliding address's lock, kept for a waiter of ours: give it back
      uint64_t zero = 0;
      c.write(GlobalAddress::from_raw(held), &zero, 8);
      s.held.store(0, std::memory_order_relaxed);
      s.streak.store(0, std::memory_order_relaxed);
    }
    return false;
  }

  // Called by the holder before it builds its final batch: true = keep the remote lock for a
  // local waiter (do not append the unlock write).
  bool should_hand_over(GlobalAddress lock) {
    Slot& s = slot(lock);
    bool waiters =
        s.next.load(std::memory_order_acquire) - s.serving.load(std::memory_order_acquire) > 1;
    return waiters && s.streak.load(std::memory_order_relaxed) < max_streak_;
  }

  void release(GlobalAddress lock, bool handed_over) {
    Slot& s = slot(lock);
    if (handed_over) {
      s.held.store(lock.raw(), std::memory_order_relaxed);
      s.streak.fetch_add(1, std::memory_order_relaxed);
    } else {
      s.held.store(0, std::memory_order_relaxed);
      s.streak.store(0, std::memory_order_relaxed);
    }
    s.serving.fetch_add(1, std::memory_order_acq_rel);
  }

  uint64_t handovers() const { return handovers_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> next{0};
    std::atomic<uint64_t> serving{0};
    std::atomic<uint64_t> held{0};
    std::atomic<uint32_t> streak{0};
  };
  Slot& slot(GlobalAddress a) { return slots_[mix64(a.raw()) % n_]; }

  std::unique_ptr<Slot[]> slots_;
  size_t n_;
  uint32_t max_streak_;
  std::atomic<uint64_t> handovers_{0};
};

}  // namespace dmrt::btree
