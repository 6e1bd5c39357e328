// The contract of a dmrt-bench index adapter, as concepts: what bench/driver/runner.h drives.
//
// An adapter is a struct template over the transport with (its name, summary and flags are its
// registration's, bench/indexes/register.h):
//   static constexpr bool kLocal                true for single-machine peers (no verbs at all)
//   using Index = ...;                          the object shared by every client
//   using Handle = ...;                         per-client handle: a KvHandle (scans: RangeHandle)
//   static std::shared_ptr<Index> create(Client<T>& setup, const IndexOptions&);
//   static Handle handle(Index&, Client<T>&);
//   static IndexStats stats(Index&, Client<T>&);   after each phase (its traffic is not counted)
//   static uint64_t cache_bytes(Index&, Handle&);  compute-side cache of one handle (summed)
// Optional:
//   using Flags = ...;                          its parsed --<name>-* flags (a FlagResolver,
//                                               bench/indexes/spec.h); create() then takes
//                                               (setup, IndexOptions, Flags)
//   static nlohmann::json describe(const IndexOptions&[, const Flags&]);
//                                               the options the index runs with -> "index_options"
//   static uint64_t shared_cache_bytes(Index&); a cache shared by clients (per compute node),
//                                               added once to the handles' sum
// Whether an index supports scans (workload E) is whether its Handle models RangeHandle.
// The disaggregated-memory indexes share one adapter, DmAdapter (bench/indexes/dm_adapter.h); the
// local peers have their own (LocalPeer in bench/indexes/run_index.h over bench/peers/*.h).
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string_view>

#include "bench/indexes/adapter.h"
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

}  // namespace dmrt::bench
