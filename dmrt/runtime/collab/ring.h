// Consistent-hash ring of the collaborative service: which live compute node owns a table id.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/hash.h"

namespace dmrt::collab {

// Consistent-hash ring over a live mask.
class Ring {
 public:
  Ring(uint64_t mask, unsigned vnodes) {
    for (unsigned n = 0; n < 48; ++n)
      if (mask >> n & 1)
        for (unsigned v = 0; v < vnodes; ++v)
          points_.emplace_back(mix64((uint64_t{n} << 32 | v) ^ 0x5bd1e9955bd1e995ull),
                               static_cast<NodeId>(n));
    std::sort(points_.begin(), points_.end());
    single_ = !points_.empty() && points_.front().second == points_.back().second &&
              std::all_of(points_.begin(), points_.end(),
                          [&](const auto& p) { return p.second == points_.front().second; });
  }
  bool empty() const { return points_.empty(); }
  NodeId owner(uint64_t id) const {
    if (single_) return points_.front().second;  // one live node owns every id: no search
    uint64_t h = mix64(id * 0x9e3779b97f4a7c15ull + 0x7f4a7c15);
    auto it = std::lower_bound(points_.begin(), points_.end(), std::make_pair(h, NodeId{0}));
    if (it == points_.end()) it = points_.begin();
    return it->second;
  }

 private:
  std::vector<std::pair<uint64_t, NodeId>> points_;
  bool single_ = false;
};

}  // namespace dmrt::collab
