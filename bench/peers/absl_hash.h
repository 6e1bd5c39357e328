// Local peer `absl-hash`: the key space hashed onto 256 submaps, each an
// absl::flat_hash_map<uint64_t, std::string> (std::string keys with --key-size > 8) behind a
// std::shared_mutex (readers share, writers exclude), as phmap::parallel_flat_hash_map does it.
// Locks are held only inside one call, never across a fiber switch. No verbs at all (round trips
// stay 0).
// Its index and handle, here so that tests can drive them (tests/harness/peer_bytes_test.cpp);
// its dmrt-bench entry is bench/peers/absl_hash.cpp.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "bench/indexes/adapter.h"
#include "bench/peers/keys.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::bench {

class AbslHashIndex {
 public:
  static constexpr size_t kSubmaps = 256;
  // Own cache line each, so that two threads on two submaps do not share a lock's line.
  struct alignas(64) Submap {
    mutable std::shared_mutex mu;
    absl::flat_hash_map<Key, std::string> map;
    absl::flat_hash_map<std::string, std::string> bytes;  // --key-size > 8
  };

  // Pre-sized for `expected` keys, as tbb-hash is, so that the load phase does not rehash; only
  // the map the run's keys go to.
  explicit AbslHashIndex(const IndexOptions& o) : subs_(kSubmaps), key_size_(o.key_size) {
    for (Submap& s : subs_) {
      if (o.key_size > kIntegerKeyBytes)
        s.bytes.reserve(o.expected_keys / kSubmaps + 1);
      else
        s.map.reserve(o.expected_keys / kSubmaps + 1);
    }
  }
  IndexStats stats() const {
    return {{"size", static_cast<double>(size())},
            {"submaps", static_cast<double>(kSubmaps)},
            {"capacity", static_cast<double>(capacity())}};
  }
  // The top bits of a mixer pick the submap; absl hashes the key again inside it, so the bits it
  // uses for its own groups do not repeat the submap's.
  Submap& of(Key k) { return subs_[mix64(k) >> 56]; }
  Submap& of(std::string_view k) { return subs_[mix64(std::hash<std::string_view>{}(k)) >> 56]; }
  uint32_t key_size() const { return key_size_; }

  size_t size() const {
    size_t n = 0;
    for (const Submap& s : subs_) {
      std::shared_lock g(s.mu);
      n += s.map.size() + s.bytes.size();
    }
    return n;
  }
  size_t capacity() const {
    size_t n = 0;
    for (const Submap& s : subs_) {
      std::shared_lock g(s.mu);
      n += s.map.capacity() + s.bytes.capacity();
    }
    return n;
  }

 private:
  std::vector<Submap> subs_;
  uint32_t key_size_;
};

class AbslHashHandle {
 public:
  explicit AbslHashHandle(AbslHashIndex& idx) : idx_(&idx), keys_(idx.key_size()) {}
  bool search(Key k, std::string& out) {
    if (keys_.bytes()) return search_in<&Sub::bytes>(keys_.str(k), out);
    return search_in<&Sub::map>(k, out);
  }
  bool insert(Key k, std::string_view v) {
    if (keys_.bytes()) return insert_in<&Sub::bytes>(keys_.str(k), v);
    return insert_in<&Sub::map>(k, v);
  }
  bool update(Key k, std::string_view v) {
    if (keys_.bytes()) return update_in<&Sub::bytes>(keys_.str(k), v);
    return update_in<&Sub::map>(k, v);
  }
  bool remove(Key k) {
    if (keys_.bytes()) return remove_in<&Sub::bytes>(keys_.str(k));
    return remove_in<&Sub::map>(k);
  }

  bool search(std::string_view k, std::string& out) {
    keys_.check(k);
    if (keys_.bytes()) return search_in<&Sub::bytes>(keys_.str(k), out);
    return search_in<&Sub::map>(key_of_bytes(k), out);
  }
  bool insert(std::string_view k, std::string_view v) {
    keys_.check(k);
    if (keys_.bytes()) return insert_in<&Sub::bytes>(keys_.str(k), v);
    return insert_in<&Sub::map>(key_of_bytes(k), v);
  }
  bool update(std::string_view k, std::string_view v) {
    keys_.check(k);
    if (keys_.bytes()) return update_in<&Sub::bytes>(keys_.str(k), v);
    return update_in<&Sub::map>(key_of_bytes(k), v);
  }
  bool remove(std::string_view k) {
    keys_.check(k);
    if (keys_.bytes()) return remove_in<&Sub::bytes>(keys_.str(k));
    return remove_in<&Sub::map>(key_of_bytes(k));
  }

 private:
  using Sub = AbslHashIndex::Submap;
  // K is Key for the integer map, std::string for the byte map (this absl's heterogeneous lookup
  // takes absl::string_view, not std::string_view).
  template <auto M, class K>
  bool search_in(const K& k, std::string& out) {
    auto& s = idx_->of(k);
    std::shared_lock g(s.mu);
    auto it = (s.*M).find(k);
    if (it == (s.*M).end()) return false;
    out = it->second;
    return true;
  }
  template <auto M, class K>
  bool insert_in(const K& k, std::string_view v) {
    auto& s = idx_->of(k);
    std::unique_lock g(s.mu);
    return (s.*M).try_emplace(k, v).second;
  }
  template <auto M, class K>
  bool update_in(const K& k, std::string_view v) {
    auto& s = idx_->of(k);
    std::unique_lock g(s.mu);
    auto it = (s.*M).find(k);
    if (it == (s.*M).end()) return false;
    it->second.assign(v);
    return true;
  }
  template <auto M, class K>
  bool remove_in(const K& k) {
    auto& s = idx_->of(k);
    std::unique_lock g(s.mu);
    return (s.*M).erase(k) == 1;
  }

  AbslHashIndex* idx_;
  PeerKeys keys_;
};

}  // namespace dmrt::bench
