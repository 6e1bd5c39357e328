// Local peer `absl-hash`: 256 absl::flat_hash_map submaps, each behind its own lock, in this
// process: the design of phmap::parallel_flat_hash_map (absl's Swiss table split into submaps
// with a lock each), which Debian 12 does not package. No verbs (round trips stay 0).
// Its implementation: bench/peer_absl_hash.h; its adapter: bench/run_absl_hash.cpp.
#pragma once

#include <string_view>

#include "bench/spec_flags.h"

namespace dmrt::bench {

struct AbslHashSpec {
  static constexpr std::string_view kName = "absl-hash";
  static constexpr std::string_view kSummary =
      "local peer: 256 absl::flat_hash_map submaps with a lock each in this process (phmap's "
      "parallel_flat_hash_map design; no verbs, no scans)";
  static constexpr bool kLocal = true;
  static constexpr bool kScan = false;

  static constexpr auto run = run_absl_hash;  // bench/run_absl_hash.cpp
  static constexpr auto byte_keys = byte_keys_absl_hash;
};

}  // namespace dmrt::bench
