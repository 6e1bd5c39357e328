// Local peer `tbb-hash`: tbb::concurrent_hash_map<uint64_t, std::string> in this process.
// No verbs at all (round trips stay 0): it shows what one machine's DRAM hash table offers.
// Its implementation: bench/peer_tbb_hash.h; its adapter: bench/run_tbb_hash.cpp.
#pragma once

#include <string_view>

#include "bench/spec_flags.h"

namespace dmrt::bench {

struct TbbHashSpec {
  static constexpr std::string_view kName = "tbb-hash";
  static constexpr std::string_view kSummary =
      "local peer: tbb::concurrent_hash_map in this process (no verbs, no scans)";
  static constexpr bool kLocal = true;
  static constexpr bool kScan = false;

  static constexpr auto run = run_tbb_hash;  // bench/run_tbb_hash.cpp
  static constexpr auto byte_keys = byte_keys_tbb_hash;
};

}  // namespace dmrt::bench
