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

  // The bench pre-sizes the directory from the expected keys (no resize during the run) unless
  // --race-initial-depth is given: then the table starts that small and resizes online, and the
  // results' index_stats report the resizes and what they cost.
  struct Extras : FlagExtras<Options> {
    const CLI::Option* initial_depth = nullptr;  // registered by the field list before add()
    void add(CLI::App& g) { initial_depth = g.get_option("--race-initial-depth"); }
    void finish(Options& o, const IndexOptions&) const {
      if (initial_depth && initial_depth->count() > 0) o.expected_keys = 0;
    }
    std::string check(const Options& o) const {
      if (o.initial_global_depth > o.max_global_depth)
        return "--race-initial-depth must not exceed --race-max-depth";
      return {};
    }
  };

  static constexpr auto run = run_race;  // bench/run_race.cpp
  static constexpr auto byte_keys = byte_keys_race;
};

}  // namespace dmrt::bench
