// `race`: RACE hashing (indexes/race/race.h), its switches as --race-* flags.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "bench/adapter.h"
#include "indexes/race/race.h"
#include "runtime/client.h"
#include "runtime/kv.h"

namespace dmrt::bench {

struct RaceFlags {
  static constexpr std::string_view kIndex = "race";
  static constexpr std::string_view kTitle = "RACE";

  race::Options base;

  void add(CLI::App& g) {
    add_switch(g, "--race-directory-cache", base.directory_cache,
               "Client directory cache (SRCD; off: every operation first reads its directory "
               "entry, +1 round trip, the paper's Fig. 14 baseline)");
    add_switch(g, "--race-same-slot", base.same_slot_for_same_key,
               "Concurrent inserts of one key pick the same slot (fewer duplicates to resolve)");
    g.add_option("--race-groups-per-subtable", base.groups_per_subtable,
                 "Bucket groups (main|overflow|main) per subtable")
        ->check(CLI::Range(2u, 1u << 20))
        ->capture_default_str();
    g.add_option("--race-initial-depth", base.initial_global_depth,
                 "Directory depth at creation (raised to fit the expected keys)")
        ->check(CLI::Range(0u, 20u))
        ->capture_default_str();
    g.add_option("--race-max-depth", base.max_global_depth,
                 "Largest directory depth (reserved at creation)")
        ->check(CLI::Range(1u, 20u))
        ->capture_default_str();
  }
  std::string check() const {
    if (base.initial_global_depth > base.max_global_depth)
      return "--race-initial-depth must not exceed --race-max-depth";
    return {};
  }

  race::Options resolve(const IndexOptions& io) const {
    race::Options o = base;
    o.value_size = static_cast<decltype(o.value_size)>(io.value_size);
    o.expected_keys = io.expected_keys;  // pre-sizes the directory
    return o;
  }
};

template <Transport T>
struct RaceAdapter {
  static constexpr std::string_view kName = "race";
  static constexpr std::string_view kSummary =
      "RACE hashing (ATC'21): one-sided lock-free extendible hashing on memory nodes";
  static constexpr bool kLocal = false;
  using Flags = RaceFlags;
  using Index = race::RaceIndex<T>;
  using Handle =
      std::remove_cvref_t<decltype(std::declval<Index&>().handle(std::declval<Client<T>&>()))>;

  static std::shared_ptr<Index> create(Client<T>& setup, const IndexOptions& io, const Flags& f) {
    return std::shared_ptr<Index>(Index::create(setup, f.resolve(io)));
  }
  static nlohmann::json describe(const IndexOptions& io, const Flags& f) {
    const race::Options o = f.resolve(io);
    return {{"directory_cache", o.directory_cache},
            {"same_slot_for_same_key", o.same_slot_for_same_key},
            {"groups_per_subtable", o.groups_per_subtable},
            {"initial_global_depth", o.initial_global_depth},
            {"max_global_depth", o.max_global_depth},
            {"expected_keys", o.expected_keys}};
  }
  static Handle handle(Index& idx, Client<T>& c) { return idx.handle(c); }
  static IndexStats stats(Index& idx, Client<T>& c) {
    IndexStats s;
    for (const auto& [k, v] : idx.stats(c)) s[k] = static_cast<double>(v);
    return s;
  }
  // The directory cache of one client (RACE keeps it per handle).
  static uint64_t cache_bytes(Index&, Handle& h) {
    if constexpr (requires { h.cache_bytes(); })
      return static_cast<uint64_t>(h.cache_bytes());
    else
      return 0;
  }
};

}  // namespace dmrt::bench
