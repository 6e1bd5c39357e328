// `sherman`: Sherman; its --sherman-* flags come from
// sherman::Options::fields().
#pragma once

#include <string_view>

#include "bench/spec_flags.h"
#include "indexes/sherman/options.h"

namespace dmrt::bench {

struct ShermanSpec {
  static constexpr std::string_view kName = "sherman";
  static constexpr std::string_view kTitle = "Sherman";
  static constexpr std::string_view kSummary =
      "Sherman (SIGMOD'22): B+ tree with cached internal nodes, whole-leaf reads, hierarchical "
      "locks";
  static constexpr bool kLocal = false;
  static constexpr bool kScan = true;
  using Options = sherman::Options;

  static constexpr auto run = run_sherman;  // bench/run_sherman.cpp
  static constexpr auto byte_keys = byte_keys_sherman;
};

}  // namespace dmrt::bench
