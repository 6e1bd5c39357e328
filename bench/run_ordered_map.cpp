// dmrt-bench's local peer `ordered-map`: a concurrent ordered map in this process, with scans.
//
// Design: the key space is cut into kShards contiguous ranges; each shard is a std::map behind a
// std::shared_mutex (readers share, writers exclude). Shards are ordered, so a scan walks from the
// shard holding `from` to the following ones. tbb::concurrent_map (oneTBB 2021.8) was the other
// candidate, but it has no concurrent erase and updating a std::string value in place would race
// with readers; range shards give search/insert/update/remove/scan all thread-safe with one rule.
// A scan is atomic per shard, not across shards (fine for YCSB E, documented in docs/bench.md).
// With --key-order ordered the shard width follows the expected key space, so records still
// spread over all shards.

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "bench/entries.h"
#include "bench/run_index.h"
#include "runtime/client.h"
#include "runtime/kv.h"

namespace dmrt::bench {

class OrderedMapIndex {
 public:
  static constexpr size_t kShards = 256;
  struct alignas(64) Shard {
    mutable std::shared_mutex mu;
    std::map<Key, std::string> map;
  };

  // Keys are expected in [1, key_space]; 0 = the full 64-bit space.
  explicit OrderedMapIndex(const IndexOptions& o) : shards_(kShards) {
    width_ = o.key_space == 0 ? (~uint64_t{0} / kShards) + 1
                              : std::max<uint64_t>(1, o.key_space / kShards + 1);
  }
  IndexStats stats() const {
    return {{"size", static_cast<double>(size())},
            {"shards", static_cast<double>(kShards)},
            {"largest_shard", static_cast<double>(largest_shard())}};
  }

  size_t shard_of(Key k) const { return std::min<uint64_t>(k / width_, kShards - 1); }
  Shard& shard(size_t i) { return shards_[i]; }

  size_t size() const {
    size_t n = 0;
    for (const Shard& s : shards_) {
      std::shared_lock g(s.mu);
      n += s.map.size();
    }
    return n;
  }
  size_t largest_shard() const {
    size_t n = 0;
    for (const Shard& s : shards_) {
      std::shared_lock g(s.mu);
      n = std::max(n, s.map.size());
    }
    return n;
  }

 private:
  std::vector<Shard> shards_;
  uint64_t width_;
};

class OrderedMapHandle {
 public:
  explicit OrderedMapHandle(OrderedMapIndex& idx) : idx_(&idx) {}
  bool search(Key k, std::string& out) {
    auto& s = idx_->shard(idx_->shard_of(k));
    std::shared_lock g(s.mu);
    auto it = s.map.find(k);
    if (it == s.map.end()) return false;
    out = it->second;
    return true;
  }
  bool insert(Key k, std::string_view v) {
    auto& s = idx_->shard(idx_->shard_of(k));
    std::unique_lock g(s.mu);
    return s.map.try_emplace(k, v).second;
  }
  bool update(Key k, std::string_view v) {
    auto& s = idx_->shard(idx_->shard_of(k));
    std::unique_lock g(s.mu);
    auto it = s.map.find(k);
    if (it == s.map.end()) return false;
    it->second.assign(v);
    return true;
  }
  bool remove(Key k) {
    auto& s = idx_->shard(idx_->shard_of(k));
    std::unique_lock g(s.mu);
    return s.map.erase(k) == 1;
  }
  void scan(Key from, size_t count, std::vector<std::pair<Key, std::string>>& rows) {
    rows.clear();
    for (size_t i = idx_->shard_of(from); i < OrderedMapIndex::kShards && rows.size() < count;
         ++i) {
      auto& s = idx_->shard(i);
      std::shared_lock g(s.mu);
      for (auto it = s.map.lower_bound(from); it != s.map.end() && rows.size() < count; ++it)
        rows.emplace_back(it->first, it->second);
    }
  }

 private:
  OrderedMapIndex* idx_;
};

int run_ordered_map(const RunRequest& r) {
  return run_transports<LocalPeer<OrderedMapIndex, OrderedMapHandle>>(r, NoFlags{});
}

}  // namespace dmrt::bench
