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
// Its implementation: bench/peer_ordered_map.h; its adapter: bench/run_ordered_map.cpp.
#pragma once

#include <string_view>

#include "bench/spec_flags.h"

namespace dmrt::bench {

struct OrderedMapSpec {
  static constexpr std::string_view kName = "ordered-map";
  static constexpr std::string_view kSummary =
      "local peer: 256 key-range shards of std::map + shared_mutex in this process (scans)";
  static constexpr bool kLocal = true;
  static constexpr bool kScan = true;

  static constexpr auto run = run_ordered_map;  // bench/run_ordered_map.cpp
  static constexpr auto byte_keys = byte_keys_ordered_map;
};

}  // namespace dmrt::bench
