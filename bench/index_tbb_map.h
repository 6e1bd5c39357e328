// Local peer `tbb-map`: tbb::concurrent_map (oneTBB's lock-free skip list) in this process, with
// scans. No verbs (round trips stay 0). Its implementation: bench/peer_tbb_map.h; its adapter:
// bench/run_tbb_map.cpp.
#pragma once

#include <string_view>

#include "bench/spec_flags.h"

namespace dmrt::bench {

struct TbbMapSpec {
  static constexpr std::string_view kName = "tbb-map";
  static constexpr std::string_view kSummary =
      "local peer: tbb::concurrent_map (skip list) in this process, a spinlock per value, "
      "deletes as tombstones (scans)";
  static constexpr bool kLocal = true;
  static constexpr bool kScan = true;

  static constexpr auto run = run_tbb_map;  // bench/run_tbb_map.cpp
  static constexpr auto byte_keys = byte_keys_tbb_map;
};

}  // namespace dmrt::bench
