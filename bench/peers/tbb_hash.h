// Local peer `tbb-hash`: tbb::concurrent_hash_map<uint64_t, std::string> in this
// process (std::string keys with --key-size > 8). No verbs at all (round trips stay 0): it shows
// what one machine's DRAM hash table offers.
// Its index and handle, here so that tests can drive them (tests/harness/peer_bytes_test.cpp);
// its dmrt-bench entry is bench/peers/tbb_hash.cpp.
#pragma once

#include <oneapi/tbb/concurrent_hash_map.h>

#include <memory>
#include <string>
#include <string_view>

#include "bench/indexes/adapter.h"
#include "bench/peers/keys.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::bench {

class TbbHashIndex {
 public:
  using Map = tbb::concurrent_hash_map<Key, std::string>;
  using BytesMap = tbb::concurrent_hash_map<std::string, std::string>;  // --key-size > 8
  // Only the map the run's keys go to is pre-sized.
  explicit TbbHashIndex(const IndexOptions& o)
      : key_size_(o.key_size),
        map_(o.key_size > kIntegerKeyBytes ? 1 : presize(o)),
        bytes_(o.key_size > kIntegerKeyBytes ? presize(o) : 1) {}
  IndexStats stats() const {
    return {{"size", static_cast<double>(map_.size() + bytes_.size())},
            {"bucket_count", static_cast<double>(map_.bucket_count() + bytes_.bucket_count())}};
  }
  Map& map() { return map_; }
  BytesMap& bytes_map() { return bytes_; }
  uint32_t key_size() const { return key_size_; }

 private:
  static size_t presize(const IndexOptions& o) { return o.expected_keys ? o.expected_keys : 1024; }
  uint32_t key_size_;
  Map map_;
  BytesMap bytes_;
};

// Element locks are held only inside one call, never across a fiber switch.
class TbbHashHandle {
 public:
  explicit TbbHashHandle(TbbHashIndex& idx)
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
  bool remove(Key k) { return keys_.bytes() ? bytes_->erase(keys_.str(k)) : map_->erase(k); }

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
    return keys_.bytes() ? bytes_->erase(keys_.str(k)) : map_->erase(key_of_bytes(k));
  }

 private:
  template <class M, class K>
  static bool search_in(M& m, const K& k, std::string& out) {
    typename M::const_accessor a;
    if (!m.find(a, k)) return false;
    out = a->second;
    return true;
  }
  template <class M, class K>
  static bool insert_in(M& m, const K& k, std::string_view v) {
    typename M::accessor a;
    if (!m.insert(a, k)) return false;
    a->second.assign(v);
    return true;
  }
  template <class M, class K>
  static bool update_in(M& m, const K& k, std::string_view v) {
    typename M::accessor a;
    if (!m.find(a, k)) return false;
    a->second.assign(v);
    return true;
  }

  TbbHashIndex::Map* map_;
  TbbHashIndex::BytesMap* bytes_;
  PeerKeys keys_;
};

}  // namespace dmrt::bench
