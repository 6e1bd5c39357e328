// `smart`: SMART; its --smart-* flags come from smart::Options::fields().
#pragma once

#include <string_view>

#include "bench/spec_flags.h"
#include "indexes/smart/options.h"

namespace dmrt::bench {

struct SmartSpec {
  static constexpr std::string_view kName = "smart";
  static constexpr std::string_view kTitle = "SMART";
  static constexpr std::string_view kSummary =
      "SMART (OSDI'23): adaptive radix tree with lock-free inner nodes and a compute-side cache";
  static constexpr bool kLocal = false;
  static constexpr bool kScan = true;
  using Options = smart::Options;
  static constexpr auto run = run_smart;  // bench/run_smart.cpp
  static constexpr auto byte_keys = byte_keys_smart;
};

}  // namespace dmrt::bench
