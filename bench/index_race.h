// `race`: RACE hashing (indexes/race/race.h); its --race-* flags come from race::Options::fields().
#pragma once

#include <string_view>

#include "bench/adapter.h"
#include "bench/dm_adapter.h"
#include "indexes/race/race.h"

namespace dmrt::bench {

struct RaceSpec {
  static constexpr std::string_view kName = "race";
  static constexpr std::string_view kTitle = "RACE";
  static constexpr std::string_view kSummary =
      "RACE hashing (ATC'21): one-sided lock-free extendible hashing on memory nodes";
  using Options = race::Options;
  template <Transport T>
  using Index = race::Index<T>;
  static constexpr bool kPerComputeNode = false;  // its directory cache is per handle

  template <Transport T>
  static Options options(const IndexOptions& io) {
    Options o;
    o.value_size = static_cast<decltype(o.value_size)>(io.value_size);
    o.expected_keys = io.expected_keys;  // pre-sizes the directory
    return o;
  }

  struct Extras : FlagExtras<Options> {
    std::string check(const Options& o) const {
      if (o.initial_global_depth > o.max_global_depth)
        return "--race-initial-depth must not exceed --race-max-depth";
      return {};
    }
  };
};

}  // namespace dmrt::bench
