// The checker's memory: a budget shared by all searches of one check, and the memo set of visited
// search configurations that draws on it (internal to dmrt/check/).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "dmrt/check/search_poll.h"

namespace dmrt::check_detail {

// Bytes the searches of one check may hold at once. A search asks before it grows; when the
// answer is no it stops with an unknown verdict instead of taking the machine's memory.
class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Takes `bytes` unless that would pass the limit (limit 0: no limit).
  bool acquire(uint64_t bytes) {
    uint64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (limit_ != 0 && (bytes > limit_ || used > limit_ - bytes)) {
        refused_.store(true, std::memory_order_relaxed);
        return false;
      }
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  }
  void release(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  bool refused() const { return refused_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
  std::atomic<bool> refused_{false};
};

inline uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

// Set of variable-length word strings (memoized configurations), open addressing. Its arena and
// table grow only with the budget's consent (none given: unbounded).
class Memo {
 public:
  enum class Insert { kNew, kSeen, kFull, kStopped };

  explicit Memo(MemoryBudget* budget = nullptr) : budget_(budget) {}
  Memo(const Memo&) = delete;
  Memo& operator=(const Memo&) = delete;
  ~Memo() {
    if (budget_) budget_->release(charged_);
  }

  // Empties the set and gives its memory back (refilling a table of a hundred million slots
  // would be a quarter of a second that no deadline could interrupt).
  void clear() {
    if (budget_) budget_->release(charged_);
    charged_ = 0;
    std::vector<uint64_t>().swap(arena_);
    std::vector<uint64_t>().swap(slots_);
    std::vector<uint64_t>().swap(hashes_);
    size_ = 0;
  }
  // kNew when `key` was not there (and is now); kFull when it was not and the budget refused the
  // memory to add it; kStopped when `poll` said stop (hashing a long key, or moving the table).
  Insert insert(const std::vector<uint64_t>& key, Poll& poll) {
    if (poll.tick(key.size())) return Insert::kStopped;
    if (slots_.empty() || (size_ + 1) * 2 > slots_.size()) {
      bool stopped = false;
      if (!grow(poll, stopped)) return stopped ? Insert::kStopped : Insert::kFull;
    }
    uint64_t h = hash(key);
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      uint64_t s = slots_[i];
      if (s == kEmpty) {
        size_t need = arena_.size() + key.size() + 1;
        if (need > arena_.capacity()) {
          size_t cap = std::max(need, arena_.capacity() * 2);
          if (!charge((cap - arena_.capacity()) * sizeof(uint64_t))) return Insert::kFull;
          arena_.reserve(cap);
        }
        slots_[i] = arena_.size();
        hashes_[i] = h;
        arena_.push_back(key.size());
        arena_.insert(arena_.end(), key.begin(), key.end());
        ++size_;
        return Insert::kNew;
      }
      if (hashes_[i] == h && equal(s, key)) return Insert::kSeen;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  static uint64_t hash(const std::vector<uint64_t>& key) {
    uint64_t h = key.size();
    for (uint64_t w : key) h = mix(h, w);
    return h;
  }
  bool equal(uint64_t at, const std::vector<uint64_t>& key) const {
    if (arena_[at] != key.size()) return false;
    return std::equal(key.begin(), key.end(), arena_.begin() + at + 1);
  }
  bool charge(uint64_t bytes) {
    if (budget_ && !budget_->acquire(bytes)) return false;
    charged_ += bytes;
    return true;
  }
  // The move polls every 4096 slots; when told to stop it drops the new table, keeps the old one
  // and sets `stopped`.
  bool grow(Poll& poll, bool& stopped) {
    size_t cap = slots_.empty() ? 1024 : slots_.size() * 2;
    // The old table lives on while the new one fills: charge for both, then return the old.
    if (!charge(cap * 2 * sizeof(uint64_t))) return false;
    if (poll.tick(cap / 16)) {  // allocating and zeroing the new table
      charged_ -= cap * 2 * sizeof(uint64_t);
      if (budget_) budget_->release(cap * 2 * sizeof(uint64_t));
      stopped = true;
      return false;
    }
    std::vector<uint64_t> old_slots(cap, kEmpty), old_hashes(cap);
    old_slots.swap(slots_);
    old_hashes.swap(hashes_);
    size_t mask = cap - 1;
    for (size_t j = 0; j < old_slots.size(); ++j) {
      if ((j & 4095) == 4095 && poll.tick(4096 * 4)) {
        old_slots.swap(slots_);  // back to the old table, whole
        old_hashes.swap(hashes_);
        old_slots = {};
        old_hashes = {};
        charged_ -= cap * 2 * sizeof(uint64_t);
        if (budget_) budget_->release(cap * 2 * sizeof(uint64_t));
        stopped = true;
        return false;
      }
      if (old_slots[j] == kEmpty) continue;
      size_t i = old_hashes[j] & mask;
      while (slots_[i] != kEmpty) i = (i + 1) & mask;
      slots_[i] = old_slots[j];
      hashes_[i] = old_hashes[j];
    }
    uint64_t old_bytes = old_slots.size() * 2 * sizeof(uint64_t);
    charged_ -= old_bytes;
    if (budget_) budget_->release(old_bytes);
    return true;
  }

  MemoryBudget* budget_;
  uint64_t charged_ = 0;
  std::vector<uint64_t> arena_;
  std::vector<uint64_t> slots_, hashes_;
  size_t size_ = 0;
};

}  // namespace dmrt::check_detail
