// The one bench adapter of every disaggregated-memory index: built from the Index concept
// (dmrt/runtime/index.h), the index's option field list (dmrt/runtime/option_fields.h), its spec
// (its registration, bench/indexes/NAME.cpp: name and flags) and a small run spec that
// holds what is particular to running it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "bench/indexes/adapter.h"
#include "bench/indexes/per_node.h"
#include "bench/indexes/spec.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/index.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/service_hosting.h"

namespace dmrt::bench {

// A run spec is a struct with:
//   using Options = ...;
//       the index's options (their flags come from its fields(), bench/indexes/register.h)
//   template <Transport T> using Index = ...;
//       a dmrt::Index over T
//   static constexpr bool kPerComputeNode;
//       one index object per compute node (PerComputeNode, bench/indexes/per_node.h)
//   template <Transport T> static Options options(Options defaults, const IndexOptions&);
//       how the bench's sizing maps onto its defaults (the spec's shown()), before the flags
//       given are applied
// Optional:
//   template <Transport T> static Deployed<Index<T>> deploy(Client<T>&, const Options&
//                                                           [, const IndexOptions&]);
//       creates the index with the memory-node services it needs (and the bulk load, if any)
//   static bool bulk_loads(const Options&);
//       the load phase's keys are bulk loaded at creation (IndexOptions::bulk_load)
//   template <Transport T> static void describe(nlohmann::json&, const Options&);
//       transport-specific additions to "index_options"

// --key-size onto an index's `key_size` (dmrt/runtime/key_bytes.h), for the indexes whose Options
// have one; an index without it takes integer keys only, and the runner refuses --key-size > 8 for
// it.
template <class Opts>
void set_key_size(Opts& o, const IndexOptions& io) {
  if constexpr (requires { o.key_size; })
    o.key_size = static_cast<decltype(o.key_size)>(io.key_size);
}

// The sizing the trees (CHIME, Sherman, DMTree) take from the bench: --value-size, and --cache-mb
// as their internal-node cache per compute node when it is given.
template <class Opts>
Opts tree_options(Opts o, const IndexOptions& io) {
  o.value_size = static_cast<uint32_t>(io.value_size);
  if (io.cache_bytes) o.cache_bytes = io.cache_bytes;
  if constexpr (requires { o.lock_holders; })
    if (io.lock_holders) o.lock_holders = true;
  return o;
}

// The run spec of the trees (CHIME, Sherman, DMTree): one object per compute node (its
// internal-node cache, hotspot buffer, local lock table or collaborative-service membership
// belong to a compute node) and tree_options() for the bench's sizing.
template <class Opts, template <Transport> class Idx>
struct TreeRun {
  using Options = Opts;
  template <Transport T>
  using Index = Idx<T>;
  static constexpr bool kPerComputeNode = true;
  template <Transport T>
  static Opts options(Opts o, const IndexOptions& io) {
    return tree_options(o, io);
  }
  // The leaf synchronization a tree runs with on T (CHIME's and Sherman's `sync`, auto resolved
  // by the transport's line atomicity), so that "index_options" records it. On verbs that is the
  // NIC's answer; a software device narrows it at run time (index_stats.line_versions).
  template <Transport T>
  static void describe(nlohmann::json& j, const Opts& o) {
    if constexpr (requires { o.resolved_sync(true); }) {
      const auto s = o.resolved_sync(line_atomic<T>);
      for_each_field<Opts>([&](const auto& f) {
        if constexpr (std::is_same_v<typename std::remove_cvref_t<decltype(f)>::Value,
                                     std::remove_cvref_t<decltype(s)>>)
          j[std::string(f.key)] = f.name_of(s);
      });
    }
  }
};

template <class Run, Transport T>
struct DmAdapter {
  using Opts = typename Run::Options;
  using Idx = typename Run::template Index<T>;
  static_assert(dmrt::Index<Idx, T>, "a bench spec names a type that is no dmrt::Index");
  static constexpr bool kPerNode = Run::kPerComputeNode;

  static constexpr bool kLocal = false;
  using Flags = FlagResolver<Opts>;  // the parsed --<index>-* flags
  using Handle = typename Idx::Handle;

  // What the clients share: one index, or one per compute node; and the services started for it.
  struct Index {
    std::conditional_t<kPerNode, std::unique_ptr<PerComputeNode<T, Idx, Opts>>,
                       std::shared_ptr<Idx>>
        index;
    std::function<void()> stop;
    ~Index() {
      try {
        if (stop) stop();
      } catch (...) {
      }
    }
  };

  // The options the index runs with: the run spec's mapping of the bench's sizing, --key-size
  // (every index's `key_size`, once it has one), then the flags given.
  static Opts options_of(const IndexOptions& io, const Flags& f) {
    Opts o = Run::template options<T>(f.defaults(), io);
    set_key_size(o, io);
    return f.resolve(o, io);
  }

  static std::shared_ptr<Index> create(Client<T>& setup, const IndexOptions& io, const Flags& f) {
    const Opts o = options_of(io, f);
    auto out = std::make_shared<Index>();
    if constexpr (kPerNode) {
      out->index = std::make_unique<PerComputeNode<T, Idx, Opts>>(o);
      out->index->create_first(setup);
    } else if constexpr (requires { Run::template deploy<T>(setup, o, io); }) {
      Deployed<Idx> d = Run::template deploy<T>(setup, o, io);
      out->index = std::move(d.index);
      out->stop = std::move(d.stop);
    } else if constexpr (requires { Run::template deploy<T>(setup, o); }) {
      Deployed<Idx> d = Run::template deploy<T>(setup, o);
      out->index = std::move(d.index);
      out->stop = std::move(d.stop);
    } else {
      out->index = Idx::create(setup, o);
    }
    return out;
  }
  // Joins the index another process created (dmrt-bench --attach); the memory-node services
  // are the creator's or a dmrt-node's.
  static std::shared_ptr<Index> attach(Client<T>& setup, const IndexOptions& io, const Flags& f) {
    const Opts o = options_of(io, f);
    auto out = std::make_shared<Index>();
    if constexpr (kPerNode) {
      out->index = std::make_unique<PerComputeNode<T, Idx, Opts>>(o);
      out->index->attach_first(setup);
    } else {
      out->index = Idx::attach(setup, o);
    }
    return out;
  }
  static bool bulk_loads(const IndexOptions& io, const Flags& f) {
    if constexpr (requires(const Opts& o) { Run::bulk_loads(o); })
      return Run::bulk_loads(options_of(io, f));
    else
      return false;
  }
  static nlohmann::json describe(const IndexOptions& io, const Flags& f) {
    const Opts o = options_of(io, f);
    nlohmann::json j = option_fields_json(o);
    f.describe(j, o);
    if constexpr (requires { Run::template describe<T>(j, o); }) Run::template describe<T>(j, o);
    return j;
  }
  static Handle handle(Index& idx, Client<T>& c) {
    if constexpr (kPerNode)
      return idx.index->tree_for(c)->handle(c);
    else
      return idx.index->handle(c);
  }
  static IndexStats stats(Index& idx, Client<T>& c) {
    if constexpr (kPerNode)
      return idx.index->merged_stats(c);
    else
      return idx.index->stats(c);
  }
  // A per-handle cache (RACE's directory, ROLEX's models) is summed over the handles; a
  // per-compute-node one (the trees' internal nodes) is counted once per node below.
  static uint64_t cache_bytes(Index&, Handle& h) {
    if constexpr (!kPerNode && requires { h.cache_bytes(); })
      return static_cast<uint64_t>(h.cache_bytes());
    else
      return 0;
  }
  static uint64_t shared_cache_bytes(Index& idx) {
    if constexpr (kPerNode)
      return idx.index->cache_bytes();
    else
      return 0;
  }
};

// DmAdapter over `Run`, as run_transports() (bench/indexes/run_index.h) takes an adapter template.
template <class Run>
struct DmAdapterFor {
  template <Transport T>
  using type = DmAdapter<Run, T>;
};

}  // namespace dmrt::bench
