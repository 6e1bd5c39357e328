// `hstore`: HStore (SYSTOR'23) hybrid index, with its hash-table and skiplist servers as
// memory-node services (bench/run_hstore.h); its --hstore-* flags come from
// hstore::Options::fields().
#pragma once

#include <string_view>

#include "bench/spec_flags.h"
#include "indexes/hstore/options.h"

namespace dmrt::bench {

struct HStoreSpec {
  static constexpr std::string_view kName = "hstore";
  static constexpr std::string_view kTitle = "HStore";
  static constexpr std::string_view kSummary =
      "HStore (SYSTOR'23): one-sided GET on a hash table server, writes and scans through it and a "
      "skiplist server";
  static constexpr bool kLocal = false;
  static constexpr bool kScan = true;
  using Options = hstore::Options;

  static constexpr auto run = run_hstore;  // bench/run_hstore.cpp
  static constexpr auto byte_keys = byte_keys_hstore;
};

}  // namespace dmrt::bench
