// dmrt-bench's local peer `absl-hash`: the key space hashed onto 256 submaps, each an
// absl::flat_hash_map<uint64_t, std::string> behind a std::shared_mutex (readers share, writers
// exclude), as phmap::parallel_flat_hash_map does it. Locks are held only inside one call, never
// across a fiber switch. No verbs at all (round trips stay 0).
#include <absl/container/flat_hash_map.h>

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "bench/entries.h"
#include "bench/run_index.h"
#include "runtime/client.h"
#include "runtime/hash.h"
#include "runtime/kv.h"

namespace dmrt::bench {

class AbslHashIndex {
 public:
  static constexpr size_t kSubmaps = 256;
  // Own cache line each, so that two threads on two submaps do not share a lock's line.
  struct alignas(64) Submap {
    mutable std::shared_mutex mu;
    absl::flat_hash_map<Key, std::string> map;
  };

  // Pre-sized for `expected` keys, as tbb-hash is, so that the load phase does not rehash.
  explicit AbslHashIndex(const IndexOptions& o) : subs_(kSubmaps) {
    for (Submap& s : subs_) s.map.reserve(o.expected_keys / kSubmaps + 1);
  }
  IndexStats stats() const {
    return {{"size", static_cast<double>(size())},
            {"submaps", static_cast<double>(kSubmaps)},
            {"capacity", static_cast<double>(capacity())}};
  }
  // The top bits of a mixer pick the submap; absl hashes the key again inside it, so the bits it
  // uses for its own groups do not repeat the submap's.
  Submap& of(Key k) { return subs_[mix64(k) >> 56]; }

  size_t size() const {
    size_t n = 0;
    for (const Submap& s : subs_) {
      std::shared_lock g(s.mu);
      n += s.map.size();
    }
    return n;
  }
  size_t capacity() const {
    size_t n = 0;
    for (const Submap& s : subs_) {
      std::shared_lock g(s.mu);
      n += s.map.capacity();
    }
    return n;
  }

 private:
  std::vector<Submap> subs_;
};

class AbslHashHandle {
 public:
  explicit AbslHashHandle(AbslHashIndex& idx) : idx_(&idx) {}
  bool search(Key k, std::string& out) {
    auto& s = idx_->of(k);
    std::shared_lock g(s.mu);
    auto it = s.map.find(k);
    if (it == s.map.end()) return false;
    out = it->second;
    return true;
  }
  bool insert(Key k, std::string_view v) {
    auto& s = idx_->of(k);
    std::unique_lock g(s.mu);
    return s.map.try_emplace(k, v).second;
  }
  bool update(Key k, std::string_view v) {
    auto& s = idx_->of(k);
    std::unique_lock g(s.mu);
    auto it = s.map.find(k);
    if (it == s.map.end()) return false;
    it->second.assign(v);
    return true;
  }
  bool remove(Key k) {
    auto& s = idx_->of(k);
    std::unique_lock g(s.mu);
    return s.map.erase(k) == 1;
  }

 private:
  AbslHashIndex* idx_;
};

int run_absl_hash(const RunRequest& r) {
  return run_transports<LocalPeer<AbslHashIndex, AbslHashHandle>>(r, NoFlags{});
}

}  // namespace dmrt::bench
