// The one bench adapter of every disaggregated-memory index: built from the Index concept
// (runtime/index.h), the index's option field list (runtime/option_fields.h) and a small spec
// that holds only what is particular to the index.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "bench/adapter.h"
#include "bench/option_flags.h"
#include "bench/per_node.h"
#include "runtime/client.h"
#include "runtime/index.h"
#include "runtime/kv.h"

namespace dmrt::bench {

// A spec (bench/index_NAME.h) is a struct with:
//   static constexpr std::string_view kName, kTitle, kSummary;
//       the --index name, the heading of its --help group, one line for --help
//   using Options = ...;
//       the index's options, with their field list (static constexpr auto fields())
//   template <Transport T> using Index = ...;
//       a dmrt::Index over T
//   static constexpr bool kPerComputeNode;
//       one index object per compute node (PerComputeNode, bench/per_node.h)
//   template <Transport T> static Options options(const IndexOptions&);
//       how the bench's sizing maps onto Options, before the flags given are applied
// Optional:
//   using Extras = ...;
//       flags beyond the field list (derived from FlagExtras<Options>)
//   static Options shown();
//       the defaults --help shows, where the bench's differ from Options{}
//   static constexpr std::array<std::string_view, N> kDerivedDefaults;
//       keys whose default options() derives (--help shows none)
//   template <Transport T> static Deployed<Index<T>> deploy(Client<T>&, const Options&);
//       creates the index with the memory-node services it needs
//   template <Transport T> static void describe(nlohmann::json&, const Options&);
//       transport-specific additions to "index_options"

// Flags beyond an index's field list (presets, unit conversions, derived defaults). Each hook
// is a no-op here; a spec's Extras derives from this and replaces the ones it needs.
template <class Opts>
struct FlagExtras {
  void add(CLI::App&) {}
  // Before the fields given on the command line (a preset step that single flags override).
  void preset(Opts&) const {}
  // After them (defaults derived from the final fields and the bench's sizing).
  void finish(Opts&, const IndexOptions&) const {}
  // Cross-field usage errors ("" when fine).
  std::string check(const Opts&) const { return {}; }
  void describe(nlohmann::json&, const Opts&) const {}
};

// The sizing the trees (CHIME, Sherman, DMTree) take from the bench: --value-size, and --cache-mb
// as their internal-node cache per compute node when it is given.
template <class Opts>
Opts tree_options(const IndexOptions& io) {
  Opts o;
  o.value_size = static_cast<uint32_t>(io.value_size);
  if (io.cache_bytes) o.cache_bytes = io.cache_bytes;
  return o;
}

// An index created with its memory-node services: `stop` stops them (empty when none run here).
template <class I>
struct Deployed {
  std::shared_ptr<I> index;
  std::function<void()> stop;
};

namespace detail {
template <class S>
struct ExtrasOf {
  using type = FlagExtras<typename S::Options>;
};
template <class S>
requires requires {
  typename S::Extras;
}
struct ExtrasOf<S> {
  using type = typename S::Extras;
};
}  // namespace detail

// The typed --<index>-* flags of a spec: its field list plus its extras (bench/adapter.h's
// contract for flag structs).
template <class Spec>
struct SpecFlags {
  using Options = typename Spec::Options;
  static constexpr std::string_view kIndex = Spec::kName;
  static constexpr std::string_view kTitle = Spec::kTitle;

  static Options shown() {
    if constexpr (requires { Spec::shown(); })
      return Spec::shown();
    else
      return Options{};
  }

  OptionFlags<Options> fields{shown()};
  typename detail::ExtrasOf<Spec>::type extras;

  void add(CLI::App& g) {
    if constexpr (requires { Spec::kDerivedDefaults; })
      fields.add(g, kIndex, Spec::kDerivedDefaults);
    else
      fields.add(g, kIndex);
    extras.add(g);
  }
  // The options the index runs with: the bench's mapping, the preset, the fields given, then
  // what derives from them.
  template <Transport T>
  Options resolve(const IndexOptions& io) const {
    Options o = Spec::template options<T>(io);
    extras.preset(o);
    fields.apply(o);
    extras.finish(o, io);
    return o;
  }
  std::string check() const {
    Options o = shown();
    extras.preset(o);
    fields.apply(o);
    return extras.check(o);
  }
};

template <class Spec, Transport T>
struct DmAdapter {
  using Opts = typename Spec::Options;
  using Idx = typename Spec::template Index<T>;
  static_assert(dmrt::Index<Idx, T>, "a bench spec names a type that is no dmrt::Index");
  static constexpr bool kPerNode = Spec::kPerComputeNode;

  static constexpr std::string_view kName = Spec::kName;
  static constexpr std::string_view kSummary = Spec::kSummary;
  static constexpr bool kLocal = false;
  using Flags = SpecFlags<Spec>;
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

  static std::shared_ptr<Index> create(Client<T>& setup, const IndexOptions& io, const Flags& f) {
    const Opts o = f.template resolve<T>(io);
    auto out = std::make_shared<Index>();
    if constexpr (kPerNode) {
      out->index = std::make_unique<PerComputeNode<T, Idx, Opts>>(o);
      out->index->create_first(setup);
    } else if constexpr (requires { Spec::template deploy<T>(setup, o); }) {
      Deployed<Idx> d = Spec::template deploy<T>(setup, o);
      out->index = std::move(d.index);
      out->stop = std::move(d.stop);
    } else {
      out->index = Idx::create(setup, o);
    }
    return out;
  }
  static nlohmann::json describe(const IndexOptions& io, const Flags& f) {
    const Opts o = f.template resolve<T>(io);
    nlohmann::json j = describe_option_fields(o);
    f.extras.describe(j, o);
    if constexpr (requires { Spec::template describe<T>(j, o); }) Spec::template describe<T>(j, o);
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

}  // namespace dmrt::bench
