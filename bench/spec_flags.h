// An index's spec as the command line sees it: its typed --<index>-* flags (the field list of its
// Options plus its extras), for main.cpp. bench/index_NAME.h holds one spec each; the code that
// runs the index is in bench/run_NAME.cpp and sees the flags only through FlagResolver
// (bench/spec.h), so that CLI11 is compiled in main.cpp alone.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "bench/adapter.h"
#include "bench/entries.h"
#include "bench/option_flags.h"
#include "bench/spec.h"

namespace dmrt::bench {

// A spec (bench/index_NAME.h) is a struct with:
//   static constexpr std::string_view kName, kSummary;   the --index name, a line for --help
//   static constexpr bool kLocal;    a single-machine peer (no verbs at all)
//   static constexpr bool kScan;     its handle serves scans (checked against the handle on the
//                                    run side)
//   static constexpr auto run = run_NAME;   its run side's entry point (bench/entries.h)
// and, when it has options (the disaggregated-memory indexes):
//   static constexpr std::string_view kTitle;   the heading of its --help group
//   using Options = ...;                        with their field list (static constexpr fields())
// Optional:
//   using Extras = ...;        flags beyond the field list (derived from FlagExtras<Options>)
//   static Options shown();    the bench's defaults (what --help shows), where they differ from
//                              Options{}
//   static constexpr std::array<std::string_view, N> kDerivedDefaults;
//                              keys whose default the run side derives (--help shows none)
// Every flag carries its index's name as a prefix (--chime-span, --sherman-span), so that flags
// of different indexes never collide and a flag given with the wrong --index is an error.

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
  // The options the index runs with: `base` (how the run side maps the bench's sizing onto
  // Options), the preset, the fields given, then what derives from them.
  Options resolve(Options o, const IndexOptions& io) const {
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

// The flags main.cpp fills for a spec: SpecFlags when it has Options, else none.
template <class S>
struct FlagsOfSpecImpl {
  using type = NoFlags;
};
template <class S>
requires requires {
  typename S::Options;
}
struct FlagsOfSpecImpl<S> {
  using type = SpecFlags<S>;
};
template <class S>
using FlagsOfSpec = typename FlagsOfSpecImpl<S>::type;

// The contract of a flags struct, as main.cpp registers and checks it.
template <class F>
concept IndexFlagStruct = requires(F& f, const F& cf, CLI::App& app) {
  { F::kIndex } -> std::convertible_to<std::string_view>;
  { F::kTitle } -> std::convertible_to<std::string_view>;
  f.add(app);
  { cf.check() } -> std::convertible_to<std::string>;
};

// A spec's parsed flags as the run side sees them.
template <class Spec>
class SpecResolver final : public FlagResolver<typename Spec::Options> {
 public:
  using Options = typename Spec::Options;
  explicit SpecResolver(const SpecFlags<Spec>& f) : f_(f) {}
  Options defaults() const override { return SpecFlags<Spec>::shown(); }
  Options resolve(Options base, const IndexOptions& io) const override {
    return f_.resolve(base, io);
  }
  void describe(nlohmann::json& j, const Options& o) const override { f_.extras.describe(j, o); }

 private:
  const SpecFlags<Spec>& f_;
};

}  // namespace dmrt::bench
