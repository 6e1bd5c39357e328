// `rolex`: ROLEX learned index (FAST'23), with its memory-node retraining service
// (bench/run_rolex.cpp); its --rolex-* flags come from rolex::Options::fields().
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

  // dmrt-bench's defaults: the index's own, except the retraining threshold. A bench load
  // arrives as inserts into groups trained on nothing, so every key lands in a synonym leaf;
  // retraining once 16 SLT slots are in use (not the full 128) keeps searches at a few leaves
  // instead of ~90.
  // initial_groups follows the expected keys (RolexRun::options, bench/run_rolex.cpp).
  static constexpr std::array<std::string_view, 1> kDerivedDefaults{"initial_groups"};
  static Options shown() {
    Options o;
    o.retrain_threshold = 16;
    return o;
  }

  static constexpr auto run = run_rolex;  // bench/run_rolex.cpp
};

}  // namespace dmrt::bench
