// Compute-side cache of internal nodes under a byte budget, shared by all clients of a process.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "dmrt/indexes/common/internal_node.h"
#include "dmrt/indexes/common/spin_lock.h"

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
      const Level& m = levels_[lvl];
      size_t i = m.upper(k);
      if (i == 0) continue;
      const Slot& s = m.slots[i - 1];
      if (s.node->covers(k)) {
        // Set only when clear: a hot node's flag stays set, and a store on every hit would pull
        // its line back and forth between the threads that share the cache.
        if (!s.ref->load(std::memory_order_relaxed)) s.ref->store(true, std::memory_order_relaxed);
        return s.node;
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
    Slot& slot = levels_[n.level].slot(n.lo);
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
    Level& m = levels_[n->level];
    size_t i = m.at(K::view(n->lo));
    if (i < m.size() && m.slots[i].node->addr == n->addr && m.slots[i].node->nv == n->nv) {
      used_ -= m.slots[i].node->cache_cost(kw_);
      m.erase(i);
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
    return entries_locked();
  }

 private:
  struct Slot {
    NodePtr node;
    std::shared_ptr<std::atomic<bool>> ref;
  };
  // One level's entries in ascending order of their low fences: a lookup is a binary search over
  // contiguous keys. A std::map's descent was a chain of dependent loads, one node per step,
  // and a tenth of a CHIME search's samples on shm; entries change only on put, invalidate and
  // eviction, which a vector pays for with a move of the entries after the position.
  struct Level {
    std::vector<typename K::Key> los;
    std::vector<Slot> slots;  // slots[i] is the entry whose low fence is los[i]

    size_t size() const { return los.size(); }
    // Entries with a low fence <= k.
    size_t upper(View k) const {
      return static_cast<size_t>(std::upper_bound(los.begin(), los.end(), k, std::less<>()) -
                                 los.begin());
    }
    // The position of the entry with low fence lo, or size() when there is none.
    size_t at(View lo) const {
      auto it = std::lower_bound(los.begin(), los.end(), lo, std::less<>());
      return it != los.end() && !std::less<>()(lo, *it) ? static_cast<size_t>(it - los.begin())
                                                        : size();
    }
    // The entry with low fence lo, made empty when there was none.
    Slot& slot(const typename K::Key& lo) {
      auto it = std::lower_bound(los.begin(), los.end(), lo, std::less<>());
      const auto i = it - los.begin();
      if (it == los.end() || std::less<>()(lo, *it)) {
        slots.insert(slots.begin() + i, Slot{});
        try {
          los.insert(it, lo);
        } catch (...) {
          slots.erase(slots.begin() + i);  // the two stay the same length
          throw;
        }
      }
      return slots[static_cast<size_t>(i)];
    }
    void erase(size_t i) {
      los.erase(los.begin() + static_cast<std::ptrdiff_t>(i));
      slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(i));
    }
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
      Level& m = levels_[t.level];
      const size_t i = m.at(K::view(t.lo));
      if (i == m.size() || m.slots[i].node != t.node) continue;  // superseded or invalidated
      if (m.slots[i].ref->exchange(false, std::memory_order_relaxed) &&
          spins++ < 2 * m.size() + 8) {
        clock_.push_back(std::move(t));  // second chance
        continue;
      }
      used_ -= m.slots[i].node->cache_cost(kw_);
      m.erase(i);
      evictions_.fetch_add(1, std::memory_order_relaxed);
    }
    // Tickets of superseded nodes accumulate; compact when they outnumber live entries.
    if (clock_.size() > 4 * (entries_locked() + 16)) {
      std::deque<Ticket> live;
      for (auto& t : clock_) {
        const Level& m = levels_[t.level];
        const size_t i = m.at(K::view(t.lo));
        if (i < m.size() && m.slots[i].node == t.node) live.push_back(t);
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
  std::vector<Level> levels_;
  std::deque<Ticket> clock_;
  uint64_t used_ = 0;
  std::atomic<uint64_t> evictions_{0};
  std::atomic<uint64_t> invalidations_{0};
};

using NodeCache = BasicNodeCache<IntKeys>;

}  // namespace dmrt::btree
