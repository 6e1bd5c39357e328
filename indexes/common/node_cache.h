// Compute-side cache of internal nodes under a byte budget, shared by all clients of a process.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "indexes/common/internal_node.h"
#include "indexes/common/spin_lock.h"

namespace dmrt::btree {

// Keyed by (level, lo fence): a lookup returns the lowest-level cached node whose fences cover
// the key, so a traversal starts from the deepest cached child pointer. Entries may be stale;
// callers detect that (fences, sibling-based validation) and invalidate.
//
// Eviction is CLOCK (second chance) over insertion order: what does not fit the budget is
// dropped and later re-read remotely. Thread-safe: a reader-writer lock guards the maps; it is
// never held across a remote verb, so fibers never suspend while holding it.
// K: the key policy (btree_keys.h); a node's cost counts its key slots (kw words each).
template <class K>
class BasicNodeCache {
 public:
  using Node = BasicInternalNode<K>;
  using NodePtr = std::shared_ptr<const Node>;
  using View = typename K::View;

  explicit BasicNodeCache(uint64_t budget_bytes, uint64_t key_words = 1)
      : budget_(budget_bytes), kw_(key_words) {}

  // Lowest level >= min_level whose cached node covers k.
  NodePtr find(View k, unsigned min_level = 1) const {
    std::shared_lock lock(mu_);
    for (unsigned lvl = min_level; lvl < levels_.size(); ++lvl) {
      const auto& m = levels_[lvl];
      auto it = m.upper_bound(k);
      if (it == m.begin()) continue;
      --it;
      if (it->second.node->covers(k)) {
        // Set only when clear: a hot node's flag stays set, and a store on every hit would pull
        // its line back and forth between the threads that share the cache.
        if (!it->second.ref->load(std::memory_order_relaxed))
          it->second.ref->store(true, std::memory_order_relaxed);
        return it->second.node;
      }
    }
    return nullptr;
  }

  void put(const Node& n) {
    uint64_t cost = n.cache_cost(kw_);
    if (cost > budget_) return;
    auto ptr = std::make_shared<const Node>(n);
    std::unique_lock lock(mu_);
    if (levels_.size() <= n.level) levels_.resize(n.level + 1);
    auto& slot = levels_[n.level][n.lo];
    if (slot.node) used_ -= slot.node->cache_cost(kw_);
    slot.node = ptr;
    slot.ref = std::make_shared<std::atomic<bool>>(false);
    used_ += cost;
    clock_.push_back({n.level, n.lo, ptr});
    evict_locked();
  }

  // Drops the entry if it still holds this node (a newer copy stays).
  void invalidate(const NodePtr& n) {
    if (!n) return;
    std::unique_lock lock(mu_);
    if (n->level >= levels_.size()) return;
    auto& m = levels_[n->level];
    auto it = m.find(n->lo);
    if (it != m.end() && it->second.node->addr == n->addr && it->second.node->nv == n->nv) {
      used_ -= it->second.node->cache_cost(kw_);
      m.erase(it);
      invalidations_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  uint64_t used_bytes() const {
    std::shared_lock lock(mu_);
    return used_;
  }
  uint64_t budget() const { return budget_; }
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  uint64_t invalidations() const { return invalidations_.load(std::memory_order_relaxed); }
  size_t entries() const {
    std::shared_lock lock(mu_);
    size_t n = 0;
    for (auto& m : levels_) n += m.size();
    return n;
  }

 private:
  struct Slot {
    NodePtr node;
    std::shared_ptr<std::atomic<bool>> ref;
  };
  struct Ticket {
    unsigned level;
    typename K::Key lo;
    NodePtr node;
  };

  void evict_locked() {
    size_t spins = 0;
    while (used_ > budget_ && !clock_.empty()) {
      Ticket t = std::move(clock_.front());
      clock_.pop_front();
      auto& m = levels_[t.level];
      auto it = m.find(t.lo);
      if (it == m.end() || it->second.node != t.node) continue;  // superseded or invalidated
      if (it->second.ref->exchange(false, std::memory_order_relaxed) &&
          spins++ < 2 * m.size() + 8) {
        clock_.push_back(std::move(t));  // second chance
        continue;
      }
      used_ -= it->second.node->cache_cost(kw_);
      m.erase(it);
      evictions_.fetch_add(1, std::memory_order_relaxed);
    }
    // Tickets of superseded nodes accumulate; compact when they outnumber live entries.
    if (clock_.size() > 4 * (entries_locked() + 16)) {
      std::deque<Ticket> live;
      for (auto& t : clock_) {
        auto& m = levels_[t.level];
        auto it = m.find(t.lo);
        if (it != m.end() && it->second.node == t.node) live.push_back(t);
      }
      clock_.swap(live);
    }
  }
  size_t entries_locked() const {
    size_t n = 0;
    for (auto& m : levels_) n += m.size();
    return n;
  }

  const uint64_t budget_;
  const uint64_t kw_;
  mutable RwSpinLock mu_;
  // Transparent order: a byte-key lookup takes a view, no key is built.
  std::vector<std::map<typename K::Key, Slot, std::less<>>> levels_;
  std::deque<Ticket> clock_;
  uint64_t used_ = 0;
  std::atomic<uint64_t> evictions_{0};
  std::atomic<uint64_t> invalidations_{0};
};

using NodeCache = BasicNodeCache<IntKeys>;

}  // namespace dmrt::btree
