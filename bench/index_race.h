// `race`: RACE hashing (indexes/race/race.h); its --race-* flags come from race::Options::fields().
#pragma once

#include <string_view>

#include "bench/spec_flags.h"
#include "indexes/race/options.h"

namespace dmrt::bench {

struct RaceSpec {
  static constexpr std::string_view kName = "race";
  static constexpr std::string_view kTitle = "RACE";
  static constexpr std::string_view kSummary =
      "RACE hashing (ATC'21): one-sided lock-free extendible hashing on memory nodes";
  static constexpr bool kLocal = false;
  static constexpr bool kScan = false;
  using Options = race::Options;

  struct Extras : FlagExtras<Options> {
    std::string check(const Options& o) const {
      if (o.initial_global_depth > o.max_global_depth)
        return "--race-initial-depth must not exceed --race-max-depth";
      return {};
    }
  };

  static constexpr auto run = run_race;  // bench/run_race.cpp
};

}  // namespace dmrt::bench
