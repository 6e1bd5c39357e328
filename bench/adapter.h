// What every dmrt-bench adapter sees: IndexOptions and the contract of typed --<index>-* flags.
//
// An adapter whose index has options declares `using Flags = XFlags;`, where XFlags is a plain
// (transport-independent) struct:
//   static constexpr std::string_view kIndex;   the adapter's kName (the --index it belongs to)
//   static constexpr std::string_view kTitle;   heading of its option group in --help
//   void add(CLI::App& group);                  registers --<index>-... options into its group
//   std::string check() const;                  after parsing: "" or a usage error
// and then takes them in create(Client<T>&, const IndexOptions&, const Flags&) and reports the
// options it actually used in describe(const IndexOptions&, const Flags&) -> nlohmann::json.
// Flags are plain data filled by CLI11 before anything runs; the runner hands the adapter the
// struct of the chosen index only. Every flag carries its index's name as a prefix
// (--chime-span, --sherman-span), so that flags of different indexes never collide and a
// flag given with the wrong --index is an error (see docs/bench.md).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dmrt::bench {

// What every index is told; each adapter maps the fields its index understands.
struct IndexOptions {
  size_t value_size = 8;     // bytes per value (--value-size)
  uint64_t cache_bytes = 0;  // compute-side cache budget per compute node (--cache-mb); 0 = default
  uint64_t expected_keys = 0;  // records the run will hold at most (loaded + expected inserts)
  uint64_t key_space = 0;      // keys fall in [1, key_space]; 0 = the whole 64-bit space
  unsigned clients = 1;        // threads x fibers
  unsigned compute_nodes = 1;  // clients are homed round-robin over these
  uint64_t seed = 1;
};

// The flags of an adapter that has none.
struct NoFlags {};

template <class A>
struct FlagsOfImpl {
  using type = NoFlags;
};
template <class A>
requires requires {
  typename A::Flags;
}
struct FlagsOfImpl<A> {
  using type = typename A::Flags;
};
template <class A>
using FlagsOf = typename FlagsOfImpl<A>::type;

template <class F>
concept IndexFlagStruct = requires(F& f, const F& cf, CLI::App& app) {
  { F::kIndex } -> std::convertible_to<std::string_view>;
  { F::kTitle } -> std::convertible_to<std::string_view>;
  f.add(app);
  { cf.check() } -> std::convertible_to<std::string>;
};

// `--name on|off` bound to `flag`. CLI11 also accepts true/false, yes/no and 1/0.
inline CLI::Option* add_switch(CLI::App& g, const std::string& name, bool& flag,
                               const std::string& help) {
  return g.add_option(name, flag, help)->type_name("on|off")->default_str(flag ? "on" : "off");
}

// A MiB figure as bytes (flags take MiB, the indexes take bytes).
inline uint64_t mib_to_bytes(double mib) {
  return static_cast<uint64_t>(mib * 1024.0 * 1024.0);
}

}  // namespace dmrt::bench
