// `rolex`: ROLEX learned index (FAST'23), with its memory-node retraining service
// (bench/run_rolex.h); its --rolex-* flags come from rolex::Options::fields().
#pragma once

#include <array>
#include <string_view>

#include "bench/spec_flags.h"
#include "indexes/rolex/options.h"

namespace dmrt::bench {

struct RolexSpec {
  static constexpr std::string_view kName = "rolex";
  static constexpr std::string_view kTitle = "ROLEX";
  static constexpr std::string_view kSummary =
      "ROLEX (FAST'23): learned models cached on compute nodes, one-sided leaves, retraining on "
      "the memory node";
  static constexpr bool kLocal = false;
  static constexpr bool kScan = true;
  using Options = rolex::Options;

  // dmrt-bench's defaults are the index's own: the load phase bulk loads and trains (paper), and
  // retraining starts at 128 SLT slots (2^7). A load by inserts (--rolex-bulk-load off) lands
  // every key in a synonym leaf of groups trained on nothing; --rolex-retrain-threshold 16 then
  // keeps its searches at a few leaves instead of ~90 (the setting measured before bulk loads).
  // initial_groups follows the expected keys (RolexRun::options, bench/run_rolex.h).
  static constexpr std::array<std::string_view, 1> kDerivedDefaults{"initial_groups"};

  static constexpr auto run = run_rolex;  // bench/run_rolex.cpp
  static constexpr auto byte_keys = byte_keys_rolex;
};

}  // namespace dmrt::bench
