// Local peer `ordered-map`: a concurrent ordered map in this process, with scans.
//
// Design: the key space is cut into kShards contiguous ranges; each shard is a std::map behind a
// std::shared_mutex (readers share, writers exclude). Shards are ordered, so a scan walks from the
// shard holding `from` to the following ones. tbb::concurrent_map (oneTBB 2021.8) was the other
// candidate, but it has no concurrent erase and updating a std::string value in place would race
// with readers; range shards give search/insert/update/remove/scan all thread-safe with one rule.
// A scan is atomic per shard, not across shards (fine for YCSB E, documented in docs/bench.md).
// With --key-order ordered the shard width follows the expected key space, so records still
// spread over all shards.
// Its index and handle, here so that tests can drive them (tests/harness/peer_bytes_test.cpp);
// its dmrt-bench entry is bench/peers/ordered_map.cpp.
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bench/indexes/adapter.h"
#include "bench/peers/keys.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::bench {

class OrderedMapIndex {
 public:
  static constexpr size_t kShards = 256;
  struct alignas(64) Shard {
    mutable std::shared_mutex mu;
    std::map<Key, std::string> map;
    std::map<std::string, std::string, std::less<>> bytes;  // --key-size > 8
  };

  // Keys are expected in [1, key_space]; 0 = the full 64-bit space.
  explicit OrderedMapIndex(const IndexOptions& o) : shards_(kShards), key_size_(o.key_size) {
    width_ = o.key_space == 0 ? (~uint64_t{0} / kShards) + 1
                              : std::max<uint64_t>(1, o.key_space / kShards + 1);
  }
  IndexStats stats() const {
    return {{"size", static_cast<double>(size())},
            {"shards", static_cast<double>(kShards)},
            {"largest_shard", static_cast<double>(largest_shard())}};
  }

  size_t shard_of(Key k) const { return std::min<uint64_t>(k / width_, kShards - 1); }
  // A byte key's shard is its first 8 bytes' (zero-padded, big-endian): monotone in key order, so
  // scans still walk shards in order. Keys sharing their first 8 bytes share a shard (all of
  // --key-format user's, whose first bytes are "user0000"; docs/bench.md).
  size_t shard_of(std::string_view k) const {
    char head[kIntegerKeyBytes] = {};
    std::memcpy(head, k.data(), std::min(k.size(), kIntegerKeyBytes));
    return shard_of(key_of_bytes(std::string_view(head, kIntegerKeyBytes)));
  }
  Shard& shard(size_t i) { return shards_[i]; }
  uint32_t key_size() const { return key_size_; }

  size_t size() const {
    size_t n = 0;
    for (const Shard& s : shards_) {
      std::shared_lock g(s.mu);
      n += s.map.size() + s.bytes.size();
    }
    return n;
  }
  size_t largest_shard() const {
    size_t n = 0;
    for (const Shard& s : shards_) {
      std::shared_lock g(s.mu);
      n = std::max(n, s.map.size() + s.bytes.size());
    }
    return n;
  }

 private:
  std::vector<Shard> shards_;
  uint64_t width_;
  uint32_t key_size_;
};

class OrderedMapHandle {
  using Shard = OrderedMapIndex::Shard;

 public:
  explicit OrderedMapHandle(OrderedMapIndex& idx) : idx_(&idx), keys_(idx.key_size()) {}
  bool search(Key k, std::string& out) {
    if (keys_.bytes()) return search_in<&Shard::bytes>(keys_.str(k), out);
    return search_in<&Shard::map>(k, out);
  }
  bool insert(Key k, std::string_view v) {
    if (keys_.bytes()) return insert_in<&Shard::bytes>(keys_.str(k), v);
    return insert_in<&Shard::map>(k, v);
  }
  bool update(Key k, std::string_view v) {
    if (keys_.bytes()) return update_in<&Shard::bytes>(keys_.str(k), v);
    return update_in<&Shard::map>(k, v);
  }
  bool remove(Key k) {
    if (keys_.bytes()) return remove_in<&Shard::bytes>(keys_.str(k));
    return remove_in<&Shard::map>(k);
  }
  void scan(Key from, size_t count, std::vector<std::pair<Key, std::string>>& rows) {
    rows.clear();
    auto add = [&](const auto& k, const std::string& v) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(k)>, Key>) {
        rows.emplace_back(k, v);
      } else {
        // On a byte-key peer the integer keys are its 8-byte keys; other lengths are skipped.
        if (k.size() != kIntegerKeyBytes) return false;
        rows.emplace_back(key_of_bytes(k), v);
      }
      return true;
    };
    if (keys_.bytes())
      scan_in<&Shard::bytes>(std::string_view(keys_.str(from)), count, add);
    else
      scan_in<&Shard::map>(from, count, add);
  }

  bool search(std::string_view k, std::string& out) {
    keys_.check(k);
    if (keys_.bytes()) return search_in<&Shard::bytes>(k, out);
    return search_in<&Shard::map>(key_of_bytes(k), out);
  }
  bool insert(std::string_view k, std::string_view v) {
    keys_.check(k);
    if (keys_.bytes()) return insert_in<&Shard::bytes>(k, v);
    return insert_in<&Shard::map>(key_of_bytes(k), v);
  }
  bool update(std::string_view k, std::string_view v) {
    keys_.check(k);
    if (keys_.bytes()) return update_in<&Shard::bytes>(k, v);
    return update_in<&Shard::map>(key_of_bytes(k), v);
  }
  bool remove(std::string_view k) {
    keys_.check(k);
    if (keys_.bytes()) return remove_in<&Shard::bytes>(k);
    return remove_in<&Shard::map>(key_of_bytes(k));
  }
  void scan(std::string_view from, size_t count,
            std::vector<std::pair<std::string, std::string>>& rows) {
    keys_.check(from);
    rows.clear();
    auto add = [&](const auto& k, const std::string& v) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(k)>, Key>)
        rows.emplace_back(key_bytes(k), v);
      else
        rows.emplace_back(k, v);
      return true;
    };
    if (keys_.bytes())
      scan_in<&Shard::bytes>(from, count, add);
    else
      scan_in<&Shard::map>(key_of_bytes(from), count, add);
  }

 private:
  // K is Key for the integer maps, std::string_view for the byte maps (std::less<> looks a
  // std::string key up by its view).
  template <auto M, class K>
  bool search_in(const K& k, std::string& out) {
    auto& s = idx_->shard(idx_->shard_of(k));
    std::shared_lock g(s.mu);
    auto it = (s.*M).find(k);
    if (it == (s.*M).end()) return false;
    out = it->second;
    return true;
  }
  template <auto M, class K>
  bool insert_in(const K& k, std::string_view v) {
    auto& s = idx_->shard(idx_->shard_of(k));
    std::unique_lock g(s.mu);
    if constexpr (std::is_same_v<K, Key>)
      return (s.*M).try_emplace(k, v).second;
    else
      return (s.*M).try_emplace(std::string(k), v).second;
  }
  template <auto M, class K>
  bool update_in(const K& k, std::string_view v) {
    auto& s = idx_->shard(idx_->shard_of(k));
    std::unique_lock g(s.mu);
    auto it = (s.*M).find(k);
    if (it == (s.*M).end()) return false;
    it->second.assign(v);
    return true;
  }
  template <auto M, class K>
  bool remove_in(const K& k) {
    auto& s = idx_->shard(idx_->shard_of(k));
    std::unique_lock g(s.mu);
    auto it = (s.*M).find(k);
    if (it == (s.*M).end()) return false;
    (s.*M).erase(it);
    return true;
  }
  // Rows from `from` on, each through add(key, value), which says whether it took it, until
  // `count` were taken.
  template <auto M, class K, class Add>
  void scan_in(const K& from, size_t count, Add&& add) {
    size_t taken = 0;
    for (size_t i = idx_->shard_of(from); i < OrderedMapIndex::kShards && taken < count; ++i) {
      auto& s = idx_->shard(i);
      std::shared_lock g(s.mu);
      for (auto it = (s.*M).lower_bound(from); it != (s.*M).end() && taken < count; ++it)
        if (add(it->first, it->second)) ++taken;
    }
  }

  OrderedMapIndex* idx_;
  PeerKeys keys_;
};

}  // namespace dmrt::bench
