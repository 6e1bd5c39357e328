// How an index registers with dmrt-bench from its own file: RegisterDm for a disaggregated-memory
// index (its run spec, bench/indexes/dm_adapter.h, and flag extras), RegisterPeer for a local
// map. Its flags come from its option field list; its capabilities (scan, byte keys, local) from
// its handle. Included by bench/indexes/NAME.cpp and bench/peers/NAME.cpp only.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bench/cli/option_flags.h"
#include "bench/indexes/dm_adapter.h"
#include "bench/indexes/registry.h"
#include "bench/indexes/run_index.h"
#include "dmrt/policies/shm/transport.h"

namespace dmrt::bench {

// Flags beyond an index's field list (presets, unit conversions, derived defaults). Each hook is
// a no-op here; an index's extras derive from this and replace the ones they need.
template <class Opts>
struct FlagExtras {
  void declare(FlagList&) {}
  // Before the fields given on the command line (a preset step that single flags override).
  void preset(Opts&) const {}
  // After them (defaults derived from the final fields and the bench's sizing).
  void finish(Opts&, const IndexOptions&, const FlagList&) const {}
  // Cross-field usage errors ("" when fine).
  std::string check(const Opts&) const { return {}; }
  void describe(nlohmann::json&, const Opts&) const {}
};

// What an index says of itself.
struct IndexText {
  std::string_view name, title, summary;
  int rank;
};

// A disaggregated-memory index's flags: its field list, then its extras. The run side reads
// them as a FlagResolver.
template <class Run, class Extras>
class DmFlags final : public IndexFlags, public FlagResolver<typename Run::Options> {
 public:
  using Options = typename Run::Options;

  explicit DmFlags(std::string_view index) {
    if constexpr (requires { Run::kDerivedDefaults; })
      fields_.declare(list_, index, Run::kDerivedDefaults);
    else
      fields_.declare(list_, index);
    extras_.declare(list_);
  }
  // The bench's defaults (what --help shows), where they differ from Options{}.
  static Options shown() {
    if constexpr (requires { Run::shown(); })
      return Run::shown();
    else
      return Options{};
  }

  FlagList& list() override { return list_; }
  std::string check() const override {
    Options o = shown();
    extras_.preset(o);
    fields_.apply(o, list_);
    return extras_.check(o);
  }
  Options defaults() const override { return shown(); }
  // `base` (how the run side maps the bench's sizing onto Options), the preset, the fields
  // given, then what derives from them.
  Options resolve(Options o, const IndexOptions& io) const override {
    extras_.preset(o);
    fields_.apply(o, list_);
    extras_.finish(o, io, list_);
    return o;
  }
  void describe(nlohmann::json& j, const Options& o) const override { extras_.describe(j, o); }

 private:
  FlagList list_;
  OptionFlags<Options> fields_{shown()};
  Extras extras_;
};

// The flags of an index that has none (the local peers).
class NoIndexFlags final : public IndexFlags {
 public:
  FlagList& list() override { return list_; }
  std::string check() const override { return {}; }

 private:
  FlagList list_;
};

// Capabilities are the same on every transport: they are read off the shm instantiation.
template <class A>
IndexEntry entry_of(const IndexText& t, bool local) {
  IndexEntry e;
  e.name = t.name;
  e.title = t.title;
  e.summary = t.summary;
  e.rank = t.rank;
  e.local = local;
  e.scan = kSupportsScan<A>;
  e.byte_keys = BytesKvHandle<typename A::Handle>;
  return e;
}

// `static const RegisterDm<XRun, XExtras> kRegistered{{"x", "X", "summary", rank}};`
template <class Run, class Extras = FlagExtras<typename Run::Options>>
struct RegisterDm : RegisterIndex {
  using Flags = DmFlags<Run, Extras>;
  explicit RegisterDm(const IndexText& t) : RegisterIndex(make(t)) {}

 private:
  static IndexEntry make(const IndexText& t) {
    IndexEntry e = entry_of<DmAdapter<Run, ShmTransport>>(t, false);
    e.make_flags = [](std::string_view name) -> std::unique_ptr<IndexFlags> {
      return std::make_unique<Flags>(name);
    };
    e.run = [](const RunRequest& r, const IndexFlags& f) {
      return run_transports<DmAdapterFor<Run>>(
          r, static_cast<const FlagResolver<typename Run::Options>&>(static_cast<const Flags&>(f)));
    };
    return e;
  }
};

// A local peer: I built from IndexOptions, H(I&) its handle (LocalPeer, bench/indexes/run_index.h).
template <class I, class H>
struct RegisterPeer : RegisterIndex {
  explicit RegisterPeer(const IndexText& t) : RegisterIndex(make(t)) {}

 private:
  static IndexEntry make(const IndexText& t) {
    using P = LocalPeer<I, H>;
    IndexEntry e = entry_of<typename P::template type<ShmTransport>>(t, true);
    e.make_flags = [](std::string_view) -> std::unique_ptr<IndexFlags> {
      return std::make_unique<NoIndexFlags>();
    };
    e.run = [](const RunRequest& r, const IndexFlags&) { return run_transports<P>(r, NoFlags{}); };
    return e;
  }
};

}  // namespace dmrt::bench
