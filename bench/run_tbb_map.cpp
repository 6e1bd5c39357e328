// dmrt-bench's local peer `tbb-map`: tbb::concurrent_map<uint64_t, Slot> in this process, with
// scans. No verbs at all (round trips stay 0).
//
// oneTBB 2021.8's concurrent_map (a skip list) inserts, finds and iterates concurrently, but it
// has no concurrent erase (only unsafe_erase), and a std::string value updated in place would
// race with its readers. So each entry's value sits in a Slot behind a one-byte spinlock, held
// only to copy a value in or out (never across a fiber switch), and a delete leaves the node in
// the map as a tombstone (present = false) that a later insert fills again. YCSB never deletes,
// so no tombstone accumulates there.
#include <oneapi/tbb/concurrent_map.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/entries.h"
#include "bench/run_index.h"
#include "runtime/client.h"
#include "runtime/kv.h"

namespace dmrt::bench {

class TbbMapIndex {
 public:
  class Slot {
   public:
    explicit Slot(std::string_view v) : value_(v), present_(true) {}
    // Copies the value out; false for a tombstone.
    bool get(std::string& out) const {
      Guard g(this);
      if (!present_) return false;
      out = value_;
      return true;
    }
    // Sets the value when the slot's presence is `want` (insert: a tombstone; update: a value).
    bool set_if(bool want, std::string_view v) {
      Guard g(this);
      if (present_ != want) return false;
      value_.assign(v);
      present_ = true;
      return true;
    }
    bool erase() {
      Guard g(this);
      if (!present_) return false;
      present_ = false;
      value_.clear();
      return true;
    }

   private:
    struct Guard {
      explicit Guard(const Slot* s) : s(s) {
        // The holder runs on another thread (locks never span a fiber switch): spin briefly,
        // then let that thread run in case it was preempted while holding.
        for (unsigned n = 0; s->lock_.exchange(true, std::memory_order_acquire); ++n)
          if (n >= 64) std::this_thread::yield();
      }
      ~Guard() { s->lock_.store(false, std::memory_order_release); }
      const Slot* s;
    };
    mutable std::atomic<bool> lock_{false};
    std::string value_;
    bool present_;
  };
  using Map = tbb::concurrent_map<Key, Slot>;

  explicit TbbMapIndex(const IndexOptions&) {}
  Map& map() { return map_; }
  // Keys with a value (tombstones excluded); walks the whole map.
  size_t size() const {
    size_t n = 0;
    std::string tmp;
    for (const auto& [k, s] : map_) n += s.get(tmp);
    return n;
  }
  size_t nodes() const { return map_.size(); }
  IndexStats stats() const {
    size_t live = size();
    return {{"size", static_cast<double>(live)},
            {"tombstones", static_cast<double>(nodes() - live)}};
  }

 private:
  Map map_;
};

class TbbMapHandle {
 public:
  using Map = TbbMapIndex::Map;
  explicit TbbMapHandle(TbbMapIndex& idx) : map_(&idx.map()) {}
  bool search(Key k, std::string& out) {
    auto it = map_->find(k);
    return it != map_->end() && it->second.get(out);
  }
  // Takes effect when the node is linked (emplace builds it whole, value included) or, over a
  // tombstone, when the slot is refilled.
  bool insert(Key k, std::string_view v) {
    auto it = map_->find(k);
    if (it == map_->end()) {
      auto [at, fresh] = map_->emplace(std::piecewise_construct, std::forward_as_tuple(k),
                                       std::forward_as_tuple(v));
      if (fresh) return true;
      it = at;
    }
    return it->second.set_if(false, v);
  }
  bool update(Key k, std::string_view v) {
    auto it = map_->find(k);
    return it != map_->end() && it->second.set_if(true, v);
  }
  bool remove(Key k) {
    auto it = map_->find(k);
    return it != map_->end() && it->second.erase();
  }
  // Each row is read under its slot's lock; the rows are not one snapshot (as in ordered-map
  // across shards; docs/bench.md).
  void scan(Key from, size_t count, std::vector<std::pair<Key, std::string>>& rows) {
    rows.clear();
    std::string v;
    for (auto it = map_->lower_bound(from); it != map_->end() && rows.size() < count; ++it)
      if (it->second.get(v)) rows.emplace_back(it->first, v);
  }

 private:
  Map* map_;
};

int run_tbb_map(const RunRequest& r) {
  return run_transports<LocalPeer<TbbMapIndex, TbbMapHandle>>(r, NoFlags{});
}

}  // namespace dmrt::bench
