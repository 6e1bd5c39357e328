// Per-compute-node local lock table: queues a node's clients locally and hands a held remote lock
// over.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/hash.h"

namespace dmrt::btree {

// Sherman's hierarchical lock: before CASing a remote lock word, a client takes a local ticket
// lock for it (hashed slot). Clients of the same compute node therefore never contend on the
// remote word, and a releasing holder with local waiters keeps the remote lock and hands it to
// the next waiter (bounded streak, so other compute nodes are not starved). Slot collisions are
// harmless: a new owner that finds another address's lock still held releases it first.
// The lock word's released value is 0 for a plain lock (Sherman's); an index whose lock word
// carries more than the lock bit (ROLEX's LT entry) passes the word to write back at release,
// and a handed-over holder gets it from acquire().
//
// Shared by all threads and fibers of one compute node; waiting spins with the client's pause()
// (yield to other fibers), never blocks the OS thread.
class LocalLockTable {
 public:
  explicit LocalLockTable(size_t slots = 4096, uint32_t max_streak = 8)
      : slots_(std::make_unique<Slot[]>(slots)), n_(slots), max_streak_(max_streak) {}

  // Waits for the local slot of `lock`. Returns true when the remote lock was handed over (it
  // is already held for this compute node); false when the caller must take the remote lock.
  // With `released`, a handed-over lock's released value (as the last holder left it) is stored
  // there.
  template <class C>
  bool acquire(C& c, GlobalAddress lock, uint64_t* released = nullptr) {
    Slot& s = slot(lock);
    uint64_t t = s.next.fetch_add(1, std::memory_order_acq_rel);
    while (s.serving.load(std::memory_order_acquire) != t) c.pause();
    uint64_t held = s.held.load(std::memory_order_relaxed);
    if (held == lock.raw()) {
      handovers_.fetch_add(1, std::memory_order_relaxed);
      if (released) *released = s.released.load(std::memory_order_relaxed);
      return true;
    }
    if (held != 0) {  // a colliding address's lock, kept for a waiter of ours: give it back
      uint64_t word = s.released.load(std::memory_order_relaxed);
      s.held.store(0, std::memory_order_relaxed);
      s.streak.store(0, std::memory_order_relaxed);
      try {
        // A release, not a plain WRITE: the word is a lock, which the device holds at memory
        // (on memory no host keeps coherent a cached WRITE would never unlock it).
        c.release(GlobalAddress::from_raw(held), &word, 8);
      } catch (...) {  // the slot is ours: pass it on before reporting the transport's error
        s.serving.fetch_add(1, std::memory_order_acq_rel);
        throw;
      }
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

  // `released`: the lock word's value once released (kept for the next holder, or for the
  // collision path of acquire(), when handed over).
  void release(GlobalAddress lock, bool handed_over, uint64_t released = 0) {
    Slot& s = slot(lock);
    if (handed_over) {
      s.held.store(lock.raw(), std::memory_order_relaxed);
      s.released.store(released, std::memory_order_relaxed);
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
    std::atomic<uint64_t> released{0};  // held's lock word value once released
    std::atomic<uint32_t> streak{0};
  };
  Slot& slot(GlobalAddress a) { return slots_[mix64(a.raw()) % n_]; }

  std::unique_ptr<Slot[]> slots_;
  size_t n_;
  uint32_t max_streak_;
  std::atomic<uint64_t> handovers_{0};
};

// One LocalLockTable per compute node, for an index object that the clients of several compute
// nodes share (dmrt/runtime/index.h: per-compute-node state must stay per compute node).
class PerNodeLockTables {
 public:
  PerNodeLockTables(size_t slots, uint32_t max_streak) : slots_(slots), max_streak_(max_streak) {}

  LocalLockTable& of(NodeId node) {
    std::lock_guard l(m_);
    auto& t = by_node_[node];
    if (!t) t = std::make_unique<LocalLockTable>(slots_, max_streak_);
    return *t;
  }
  uint64_t handovers() const {
    std::lock_guard l(m_);
    uint64_t n = 0;
    for (auto& [node, t] : by_node_) n += t->handovers();
    return n;
  }

 private:
  size_t slots_;
  uint32_t max_streak_;
  mutable std::mutex m_;
  std::map<NodeId, std::unique_ptr<LocalLockTable>> by_node_;
};

}  // namespace dmrt::btree
