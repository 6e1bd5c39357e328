// SMART's compute-side cache of inner nodes (§4.3), shared by the clients of one compute node:
// node snapshots keyed by their path (the key bytes before the byte their slots branch on).
#pragma once

#include <atomic>
#include <bitset>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dmrt/indexes/smart/detail/layout.h"

namespace dmrt::smart {

// A node's path never changes (layout.h, Header), so a snapshot stays a past state of that
// node; slots only go empty -> leaf -> node, so a cached slot is a past value of that slot. A
// traversal starting from one checks what it finds (a leaf's key, a child's header depth) and
// re-reads when it is stale. Lookups try the key's prefixes from the longest down: at most
// one probe per path length ever cached, no allocation (heterogeneous lookup). FIFO eviction under
// a byte budget; the mutex is never held across a verb.
class NodeCache {
 public:
  struct Node {
    GlobalAddress addr;
    GlobalAddress parent_slot;  // the slot it was reached through (may since point above it)
    Slot parent_entry;          // that slot's value then
    unsigned pos = 0;           // the key byte its slots branch on (= path length)
    unsigned type = 0;          // type of the snapshot (kTypeSlots[type] slots)
    // Slot values as last seen. Traversals and CASes that find a newer value store it here
    // (learn), so a stale slot is repaired by the operation that noticed it, not by a re-read.
    std::unique_ptr<std::atomic<uint64_t>[]> slots;

    Node(GlobalAddress a, unsigned t, const uint64_t* s) : addr(a), type(t) {
      slots.reset(new std::atomic<uint64_t>[size()]);
      for (unsigned i = 0; i < size(); ++i) slots[i].store(s[i], std::memory_order_relaxed);
    }
    unsigned size() const { return kTypeSlots[type]; }
    uint64_t slot(unsigned i) const { return slots[i].load(std::memory_order_relaxed); }
    void learn(unsigned i, uint64_t v) const {
      if (i < size()) slots[i].store(v, std::memory_order_relaxed);
    }
    uint64_t cost() const { return 64 + 8 * size() + pos; }
  };
  using NodePtr = std::shared_ptr<const Node>;

  explicit NodeCache(uint64_t budget) : budget_(budget) {}

  // The deepest cached node whose path is a prefix of key[0, len).
  NodePtr find(std::string_view key) const {
    std::shared_lock l(mu_);
    for (size_t n = key.size();; --n) {
      if (!lengths_.test(n)) {
        if (n == 0) break;
        continue;
      }
      auto it = map_.find(key.substr(0, n));
      if (it != map_.end()) {
        hits_.fetch_add(1, std::memory_order_relaxed);
        return it->second;
      }
      if (n == 0) break;
    }
    misses_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }

  NodePtr find_exact(std::string_view path) const {
    std::shared_lock l(mu_);
    auto it = map_.find(path);
    return it == map_.end() ? nullptr : it->second;
  }

  void put(std::string_view path, NodePtr n) {
    if (n->cost() > budget_) return;
    std::unique_lock l(mu_);
    auto it = map_.find(path);
    if (it != map_.end()) {
      used_ -= it->second->cost();
      it->second = n;
    } else {
      map_.emplace(std::string(path), n);
      fifo_.emplace_back(path);
      lengths_.set(path.size());
    }
    used_ += n->cost();
    while (used_ > budget_ && !fifo_.empty()) {
      auto old = map_.find(fifo_.front());
      if (old != map_.end()) {
        used_ -= old->second->cost();
        map_.erase(old);
        evictions_.fetch_add(1, std::memory_order_relaxed);
      }
      fifo_.pop_front();
    }
    // Paths dropped by invalidate() and cached again are queued twice: keep the queue bounded.
    if (fifo_.size() > 2 * map_.size() + 64) {
      std::deque<std::string> live;
      std::unordered_set<std::string_view> seen;
      for (auto& p : fifo_)
        if (map_.count(p) && seen.insert(p).second) live.push_back(p);
      fifo_.swap(live);
    }
  }

  // Drops the entry of `path` if it is still this snapshot.
  void invalidate(std::string_view path, const NodePtr& n) {
    std::unique_lock l(mu_);
    auto it = map_.find(path);
    if (it == map_.end() || it->second != n) return;
    used_ -= it->second->cost();
    map_.erase(it);
    invalidations_.fetch_add(1, std::memory_order_relaxed);
  }

  uint64_t used_bytes() const {
    std::shared_lock l(mu_);
    return used_;
  }
  size_t entries() const {
    std::shared_lock l(mu_);
    return map_.size();
  }
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  uint64_t invalidations() const { return invalidations_.load(std::memory_order_relaxed); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  const uint64_t budget_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, NodePtr, Hash, std::equal_to<>> map_;
  std::deque<std::string> fifo_;
  std::bitset<kMaxEncoded + 1> lengths_;  // bit n: some path of length n is (or was) cached
  uint64_t used_ = 0;
  mutable std::atomic<uint64_t> hits_{0}, misses_{0};
  std::atomic<uint64_t> evictions_{0}, invalidations_{0};
};

}  // namespace dmrt::smart
