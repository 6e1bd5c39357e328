// Local peer `tbb-map`: tbb::concurrent_map<uint64_t, Slot> in this process, with
// scans. No verbs at all (round trips stay 0).
//
// oneTBB 2021.8's concurrent_map (a skip list) inserts, finds and iterates concurrently, but it
// has no concurrent erase (only unsafe_erase), and a std::string value updated in place would
// race with its readers. So each entry's value sits in a Slot behind a one-byte spinlock, held
// only to copy a value in or out (never across a fiber switch), and a delete leaves the node in
// the map as a tombstone (present = false) that a later insert fills again. YCSB never deletes,
// so no tombstone accumulates there.
// Its index and handle, here so that tests can drive them (tests/harness/peer_bytes_test.cpp);
// its dmrt-bench entry is bench/peers/tbb_map.cpp.
#pragma once

#include <oneapi/tbb/concurrent_map.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/indexes/adapter.h"
#include "bench/peers/keys.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"

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
  using BytesMap = tbb::concurrent_map<std::string, Slot>;  // --key-size > 8

  explicit TbbMapIndex(const IndexOptions& o) : key_size_(o.key_size) {}
  Map& map() { return map_; }
  BytesMap& bytes_map() { return bytes_; }
  uint32_t key_size() const { return key_size_; }
  // Keys with a value (tombstones excluded); walks the whole map.
  size_t size() const {
    size_t n = 0;
    std::string tmp;
    for (const auto& [k, s] : map_) n += s.get(tmp);
    for (const auto& [k, s] : bytes_) n += s.get(tmp);
    return n;
  }
  size_t nodes() const { return map_.size() + bytes_.size(); }
  IndexStats stats() const {
    size_t live = size();
    return {{"size", static_cast<double>(live)},
            {"tombstones", static_cast<double>(nodes() - live)}};
  }

 private:
  uint32_t key_size_;
  Map map_;
  BytesMap bytes_;
};

class TbbMapHandle {
 public:
  using Map = TbbMapIndex::Map;
  using BytesMap = TbbMapIndex::BytesMap;
  explicit TbbMapHandle(TbbMapIndex& idx)
      : map_(&idx.map()), bytes_(&idx.bytes_map()), keys_(idx.key_size()) {}
  bool search(Key k, std::string& out) {
    return keys_.bytes() ? search_in(*bytes_, keys_.str(k), out) : search_in(*map_, k, out);
  }
  bool insert(Key k, std::string_view v) {
    return keys_.bytes() ? insert_in(*bytes_, keys_.str(k), v) : insert_in(*map_, k, v);
  }
  bool update(Key k, std::string_view v) {
    return keys_.bytes() ? update_in(*bytes_, keys_.str(k), v) : update_in(*map_, k, v);
  }
  bool remove(Key k) {
    return keys_.bytes() ? remove_in(*bytes_, keys_.str(k)) : remove_in(*map_, k);
  }
  // Each row is read under its slot's lock; the rows are not one snapshot (as in ordered-map
  // across shards; docs/bench.md).
  void scan(Key from, size_t count, std::vector<std::pair<Key, std::string>>& rows) {
    rows.clear();
    if (!keys_.bytes()) {
      scan_in(*map_, from, count, [&](Key k, std::string& v) {
        rows.emplace_back(k, v);
        return true;
      });
      return;
    }
    // On a byte-key peer the integer keys are its 8-byte keys; other lengths are skipped.
    scan_in(*bytes_, keys_.str(from), count, [&](const std::string& k, std::string& v) {
      if (k.size() != kIntegerKeyBytes) return false;
      rows.emplace_back(key_of_bytes(k), v);
      return true;
    });
  }

  bool search(std::string_view k, std::string& out) {
    keys_.check(k);
    return keys_.bytes() ? search_in(*bytes_, keys_.str(k), out)
                         : search_in(*map_, key_of_bytes(k), out);
  }
  bool insert(std::string_view k, std::string_view v) {
    keys_.check(k);
    return keys_.bytes() ? insert_in(*bytes_, keys_.str(k), v)
                         : insert_in(*map_, key_of_bytes(k), v);
  }
  bool update(std::string_view k, std::string_view v) {
    keys_.check(k);
    return keys_.bytes() ? update_in(*bytes_, keys_.str(k), v)
                         : update_in(*map_, key_of_bytes(k), v);
  }
  bool remove(std::string_view k) {
    keys_.check(k);
    return keys_.bytes() ? remove_in(*bytes_, keys_.str(k)) : remove_in(*map_, key_of_bytes(k));
  }
  void scan(std::string_view from, size_t count,
            std::vector<std::pair<std::string, std::string>>& rows) {
    keys_.check(from);
    rows.clear();
    if (keys_.bytes())
      scan_in(*bytes_, keys_.str(from), count, [&](const std::string& k, std::string& v) {
        rows.emplace_back(k, v);
        return true;
      });
    else
      scan_in(*map_, key_of_bytes(from), count, [&](Key k, std::string& v) {
        rows.emplace_back(key_bytes(k), v);
        return true;
      });
  }

 private:
  template <class M, class K>
  static bool search_in(M& m, const K& k, std::string& out) {
    auto it = m.find(k);
    return it != m.end() && it->second.get(out);
  }
  // Takes effect when the node is linked (emplace builds it whole, value included) or, over a
  // tombstone, when the slot is refilled.
  template <class M, class K>
  static bool insert_in(M& m, const K& k, std::string_view v) {
    auto it = m.find(k);
    if (it == m.end()) {
      auto [at, fresh] =
          m.emplace(std::piecewise_construct, std::forward_as_tuple(k), std::forward_as_tuple(v));
      if (fresh) return true;
      it = at;
    }
    return it->second.set_if(false, v);
  }
  template <class M, class K>
  static bool update_in(M& m, const K& k, std::string_view v) {
    auto it = m.find(k);
    return it != m.end() && it->second.set_if(true, v);
  }
  template <class M, class K>
  static bool remove_in(M& m, const K& k) {
    auto it = m.find(k);
    return it != m.end() && it->second.erase();
  }
  // Rows from `from` on: each present one through add(key, value), which says whether it took
  // it, until `count` were taken.
  template <class M, class K, class Add>
  void scan_in(M& m, const K& from, size_t count, Add&& add) {
    size_t taken = 0;
    for (auto it = m.lower_bound(from); it != m.end() && taken < count; ++it)
      if (it->second.get(value_) && add(it->first, value_)) ++taken;
  }

  Map* map_;
  BytesMap* bytes_;
  PeerKeys keys_;
  std::string value_;  // a scan's current value
};

}  // namespace dmrt::bench
