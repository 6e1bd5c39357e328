// dmrt-bench's index list: every index this build offers, listed once in SpecList by its spec
// (bench/index_NAME.h: name, summary, typed --<name>-* flags). Nothing here includes an index
// implementation: each spec's run() lives in bench/run_NAME.cpp, which instantiates the driver
// for that index on every transport compiled in.
//
// To add a disaggregated-memory index: its spec in bench/index_<name>.h, its run spec and run()
// in bench/run_<name>.cpp (the contract is at the top of bench/dm_adapter.h), the .cpp in
// bench/meson.build, and the spec in SpecList below.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/adapter.h"
#include "bench/spec.h"

#include "bench/index_absl_hash.h"
#include "bench/index_chime.h"
#include "bench/index_dmtree.h"
#include "bench/index_hstore.h"
#include "bench/index_ordered_map.h"
#include "bench/index_race.h"
#include "bench/index_rolex.h"
#include "bench/index_sherman.h"
#include "bench/index_smart.h"
#include "bench/index_tbb_hash.h"
#include "bench/index_tbb_map.h"

namespace dmrt::bench {

template <class... S>
struct TypeList {};

// Every index this build offers, the default (--index) first: the disaggregated-memory indexes
// (hash, then range), then the local peers. --help and the smoke test follow this order.
using SpecList = TypeList<RaceSpec, HStoreSpec, ChimeSpec, ShermanSpec, RolexSpec, DmtreeSpec,
                          SmartSpec, TbbHashSpec, AbslHashSpec, OrderedMapSpec, TbbMapSpec>;

// The typed flags of every index, filled by CLI11 (main.cpp) and handed to the chosen index's
// run(); position i holds the flags of the i-th spec of SpecList.
template <class L>
struct FlagSet;
template <class... S>
struct FlagSet<TypeList<S...>> {
  std::tuple<FlagsOfSpec<S>...> flags;
};
using IndexFlags = FlagSet<SpecList>;

// Calls f.template operator()<Spec>(const FlagsOfSpec<Spec>&) for the spec named `name`; false
// when there is none.
template <class F, class... S>
bool with_spec(std::string_view name, const FlagSet<TypeList<S...>>& set, F&& f) {
  bool found = false;
  auto one = [&]<class X>(const FlagsOfSpec<X>& fl) {
    if (!found && name == X::kName) {
      found = true;
      f.template operator()<X>(fl);
    }
  };
  std::apply([&](const auto&... fl) { (one.template operator()<S>(fl), ...); }, set.flags);
  return found;
}

struct IndexInfo {
  std::string name;
  std::string summary;
  bool local;
  bool scan;
  bool byte_keys;  // its handle takes byte-string keys (--key-size > 8)
};

// A spec's byte_keys() (bench/entries.h), false for a spec without one.
template <class S>
bool takes_byte_keys_spec() {
  if constexpr (requires { S::byte_keys(); })
    return S::byte_keys();
  else
    return false;
}

template <class... S>
std::vector<IndexInfo> index_infos(TypeList<S...>) {
  return {IndexInfo{std::string(S::kName), std::string(S::kSummary), S::kLocal, S::kScan,
                    takes_byte_keys_spec<S>()}...};
}

// Registers every index's flags as one CLI11 option group per index ("CHIME (--index chime)")
// and returns, per index name, its group, so that main.cpp can refuse flags of another index.
template <class... S>
std::vector<std::pair<std::string, CLI::App*>> add_index_flags(CLI::App& app,
                                                               FlagSet<TypeList<S...>>& set) {
  std::vector<std::pair<std::string, CLI::App*>> groups;
  auto one = [&]<class X>(FlagsOfSpec<X>& f) {
    if constexpr (!std::is_same_v<FlagsOfSpec<X>, NoFlags>) {
      static_assert(IndexFlagStruct<FlagsOfSpec<X>>,
                    "index flags do not follow bench/spec_flags.h");
      CLI::App* g =
          app.add_option_group(std::string(f.kTitle) + " (--index " + std::string(X::kName) + ")");
      f.add(*g);
      groups.emplace_back(std::string(X::kName), g);
    }
  };
  std::apply([&](auto&... f) { (one.template operator()<S>(f), ...); }, set.flags);
  return groups;
}

// The chosen index's flags' own consistency check ("" when fine).
template <class... S>
std::string check_index_flags(std::string_view name, const FlagSet<TypeList<S...>>& set) {
  std::string err;
  auto one = [&]<class X>(const FlagsOfSpec<X>& f) {
    if constexpr (!std::is_same_v<FlagsOfSpec<X>, NoFlags>)
      if (err.empty() && name == X::kName) err = f.check();
  };
  std::apply([&](const auto&... f) { (one.template operator()<S>(f), ...); }, set.flags);
  return err;
}

}  // namespace dmrt::bench
