// dmrt-bench's local peer `tbb-hash`: tbb::concurrent_hash_map<uint64_t, std::string> in this
// process. No verbs at all (round trips stay 0): it shows what one machine's DRAM hash table
// offers.
#include <oneapi/tbb/concurrent_hash_map.h>

#include <memory>
#include <string>
#include <string_view>

#include "bench/entries.h"
#include "bench/run_index.h"
#include "runtime/client.h"
#include "runtime/kv.h"

namespace dmrt::bench {

class TbbHashIndex {
 public:
  using Map = tbb::concurrent_hash_map<Key, std::string>;
  explicit TbbHashIndex(const IndexOptions& o) : map_(o.expected_keys ? o.expected_keys : 1024) {}
  IndexStats stats() const {
    return {{"size", static_cast<double>(map_.size())},
            {"bucket_count", static_cast<double>(map_.bucket_count())}};
  }
  Map& map() { return map_; }

 private:
  Map map_;
};

// Element locks are held only inside one call, never across a fiber switch.
class TbbHashHandle {
 public:
  explicit TbbHashHandle(TbbHashIndex& idx) : map_(&idx.map()) {}
  bool search(Key k, std::string& out) {
    TbbHashIndex::Map::const_accessor a;
    if (!map_->find(a, k)) return false;
    out = a->second;
    return true;
  }
  bool insert(Key k, std::string_view v) {
    TbbHashIndex::Map::accessor a;
    if (!map_->insert(a, k)) return false;
    a->second.assign(v);
    return true;
  }
  bool update(Key k, std::string_view v) {
    TbbHashIndex::Map::accessor a;
    if (!map_->find(a, k)) return false;
    a->second.assign(v);
    return true;
  }
  bool remove(Key k) { return map_->erase(k); }

 private:
  TbbHashIndex::Map* map_;
};

int run_tbb_hash(const RunRequest& r) {
  return run_transports<LocalPeer<TbbHashIndex, TbbHashHandle>>(r, NoFlags{});
}

}  // namespace dmrt::bench
