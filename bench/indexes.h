// dmrt-bench's index adapter layer: every index this build offers, listed once in IndexList.
//
// The disaggregated-memory indexes share one adapter, DmAdapter<Spec, T> (bench/dm_adapter.h),
// built from the Index concept and the index's option field list; bench/index_<name>.h holds only
// the index's spec (name, summary, how IndexOptions map onto its Options, its extra flags and
// its memory-node services). The local peers (tbb-hash, ordered-map) keep small adapters.
//
// Whatever its origin, an adapter is a struct template over the transport with:
//   static constexpr std::string_view kName     the --index name
//   static constexpr std::string_view kSummary  one line for --help and docs
//   static constexpr bool kLocal                true for single-machine peers (no verbs at all)
//   using Index = ...;                          the object shared by every client
//   using Handle = ...;                         per-client handle: a KvHandle (scans: RangeHandle)
//   static std::shared_ptr<Index> create(Client<T>& setup, const IndexOptions&);
//   static Handle handle(Index&, Client<T>&);
//   static IndexStats stats(Index&, Client<T>&);   after each phase (its traffic is not counted)
//   static uint64_t cache_bytes(Index&, Handle&);  compute-side cache of one handle (summed)
// Optional:
//   using Flags = XFlags;                       typed --<name>-* flags (contract: bench/adapter.h);
//                                               create() then takes (setup, IndexOptions, Flags)
//   static nlohmann::json describe(const IndexOptions&[, const Flags&]);
//                                               the options the index runs with -> "index_options"
//   static uint64_t shared_cache_bytes(Index&); a cache shared by clients (per compute node),
//                                               added once to the handles' sum
// Whether an index supports scans (workload E) is whether its Handle models RangeHandle.
// To add a disaggregated-memory index: write bench/index_<name>.h with its spec (the contract is at
// the top of bench/dm_adapter.h) and add DmAdapter<Spec, T> to IndexList below.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/adapter.h"
#include "bench/dm_adapter.h"
#include "policies/shm/transport.h"
#include "runtime/client.h"
#include "runtime/kv.h"
#include "runtime/transport.h"

namespace dmrt::bench {

// create() with the adapter's flags when it declares them, else with the IndexOptions alone.
template <class A, class T>
concept CreatesWithFlags = requires(Client<T>& c, const IndexOptions& o, const FlagsOf<A>& f) {
  { A::create(c, o, f) } -> std::same_as<std::shared_ptr<typename A::Index>>;
};
template <class A, class T>
concept CreatesPlain = requires(Client<T>& c, const IndexOptions& o) {
  { A::create(c, o) } -> std::same_as<std::shared_ptr<typename A::Index>>;
};

template <class A, class T>
concept AdapterMembers = requires(Client<T>& c, typename A::Index& idx, typename A::Handle& h) {
  { A::kName } -> std::convertible_to<std::string_view>;
  { A::kSummary } -> std::convertible_to<std::string_view>;
  { A::kLocal } -> std::convertible_to<bool>;
  { A::handle(idx, c) } -> std::same_as<typename A::Handle>;
  { A::stats(idx, c) } -> std::same_as<IndexStats>;
  { A::cache_bytes(idx, h) } -> std::convertible_to<uint64_t>;
};

template <class A, class T>
concept IndexAdapter = Transport<T> && KvHandle<typename A::Handle> && AdapterMembers<A, T> &&
    (CreatesWithFlags<A, T> || CreatesPlain<A, T>);

template <class A>
inline constexpr bool kSupportsScan = RangeHandle<typename A::Handle>;

template <class... A>
struct TypeList {};

}  // namespace dmrt::bench

// ---- the specs of the DM indexes, the local peers' adapters (one file each) -----------------
#include "bench/index_chime.h"
#include "bench/index_dmtree.h"
#include "bench/index_hstore.h"
#include "bench/index_ordered_map.h"
#include "bench/index_race.h"
#include "bench/index_rolex.h"
#include "bench/index_sherman.h"
#include "bench/index_tbb_hash.h"

namespace dmrt::bench {

// Every index this build offers, the default (--index) first: the disaggregated-memory indexes
// (hash, then range), then the local peers. --help and the smoke test follow this order.
template <Transport T>
using IndexList =
    TypeList<DmAdapter<RaceSpec, T>, DmAdapter<HStoreSpec, T>, DmAdapter<ChimeSpec, T>,
             DmAdapter<ShermanSpec, T>, DmAdapter<RolexSpec, T>, DmAdapter<DmtreeSpec, T>,
             TbbHashAdapter<T>, OrderedMapAdapter<T>>;

// The typed flags of every index, filled by CLI11 (main.cpp) and handed to the chosen adapter.
// Flag structs do not depend on the transport, so one set (built from the shm list) serves
// every transport; position i holds the flags of the i-th adapter of IndexList.
template <class L>
struct FlagSet;
template <class... A>
struct FlagSet<TypeList<A...>> {
  std::tuple<FlagsOf<A>...> flags;
};
using IndexFlags = FlagSet<IndexList<ShmTransport>>;

// True when adapter A declares flags that its create() does not take (the runner then refuses
// them rather than silently ignore them).
template <class A, class T>
inline constexpr bool kFlagsIgnored =
    !std::is_same_v<FlagsOf<A>, NoFlags> && !CreatesWithFlags<A, T>;

namespace detail {
template <Transport T, class F, class... A, size_t... I>
bool with_index(std::string_view name, const IndexFlags& flags, F&& f, TypeList<A...>,
                std::index_sequence<I...>) {
  bool found = false;
  auto one = [&]<class X, size_t J>() {
    static_assert(IndexAdapter<X, T>, "an index adapter does not satisfy IndexAdapter");
    using Fl = std::tuple_element_t<J, decltype(flags.flags)>;
    static_assert(std::is_same_v<Fl, FlagsOf<X>>, "IndexList differs between transports");
    if (!found && name == X::kName) {
      found = true;
      f.template operator()<X>(std::get<J>(flags.flags));
    }
  };
  (one.template operator()<A, I>(), ...);
  return found;
}
}  // namespace detail

// Calls f.template operator()<Adapter>(const FlagsOf<Adapter>&) for the adapter named `name`;
// false when there is none.
template <Transport T, class F, class... A>
bool with_index(std::string_view name, const IndexFlags& flags, F&& f, TypeList<A...> l) {
  return detail::with_index<T>(name, flags, std::forward<F>(f), l, std::index_sequence_for<A...>{});
}

struct IndexInfo {
  std::string name;
  std::string summary;
  bool local;
  bool scan;
  bool ignores_flags;  // declares flags its create() does not take yet (kFlagsIgnored)
};

template <Transport T, class... A>
std::vector<IndexInfo> index_infos(TypeList<A...>) {
  return {IndexInfo{std::string(A::kName), std::string(A::kSummary), A::kLocal, kSupportsScan<A>,
                    kFlagsIgnored<A, T>}...};
}

// Registers every index's flags as one CLI11 option group per index ("CHIME (--index chime)")
// and returns, per index name, its group, so that main.cpp can refuse flags of another index.
template <class... A>
std::vector<std::pair<std::string, CLI::App*>> add_index_flags(CLI::App& app,
                                                               FlagSet<TypeList<A...>>& set) {
  std::vector<std::pair<std::string, CLI::App*>> groups;
  auto one = [&]<class X>(FlagsOf<X>& f) {
    if constexpr (!std::is_same_v<FlagsOf<X>, NoFlags>) {
      static_assert(IndexFlagStruct<FlagsOf<X>>, "index flags do not follow bench/adapter.h");
      static_assert(FlagsOf<X>::kIndex == X::kName, "flags bound to the wrong index");
      CLI::App* g =
          app.add_option_group(std::string(f.kTitle) + " (--index " + std::string(X::kName) + ")");
      f.add(*g);
      groups.emplace_back(std::string(X::kName), g);
    }
  };
  std::apply([&](auto&... f) { (one.template operator()<A>(f), ...); }, set.flags);
  return groups;
}

// The chosen index's flags' own consistency check ("" when fine).
template <class... A>
std::string check_index_flags(std::string_view name, const FlagSet<TypeList<A...>>& set) {
  std::string err;
  auto one = [&]<class X>(const FlagsOf<X>& f) {
    if constexpr (!std::is_same_v<FlagsOf<X>, NoFlags>)
      if (err.empty() && name == X::kName) err = f.check();
  };
  std::apply([&](const auto&... f) { (one.template operator()<A>(f), ...); }, set.flags);
  return err;
}

}  // namespace dmrt::bench
