// Flags declared without CLI11: an index's run side declares its --<index>-* flags here, and
// main.cpp alone binds them to CLI11 (bench/cli/bind_flags.h), whose header costs seconds in
// every translation unit that includes it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "dmrt/runtime/option_fields.h"

namespace dmrt::bench {

// One flag: its name, help, where its value goes, and (after parsing) whether it was given.
struct FlagDecl {
  // A number accepted in [lo, hi].
  template <class V>
  struct Number {
    V* value;
    V lo, hi;
  };
  // A value set by name (an enum field): `set` returns false for a name it does not know.
  struct Named {
    std::function<bool(const std::string&)> set;
    std::vector<std::string> names;
  };
  using Target =
      std::variant<bool*, Number<uint8_t>, Number<uint16_t>, Number<uint32_t>, Number<uint64_t>,
                   Number<int32_t>, Number<int64_t>, Number<double>, std::string*, Named>;

  std::string name;  // with its dashes: --race-initial-depth
  std::string help;
  Target target;
  std::vector<std::string> choices = {};  // a string flag: one of these ("" = any string)
  // What --help shows as its default; none where the bench derives it (from the expected keys).
  std::optional<std::string> shown_default = {};
  std::string section = {};  // its --help section ("" = the group it is bound to)
  bool presence = false;     // a switch set by its presence alone (--quiet), not --x on|off
  bool given = false;        // set once the command line is parsed
};

// The number types a flag may hold: FlagDecl::Target's.
template <class V>
inline constexpr bool kFlagNumber =
    std::is_same_v<V, uint8_t> || std::is_same_v<V, uint16_t> || std::is_same_v<V, uint32_t> ||
    std::is_same_v<V, uint64_t> || std::is_same_v<V, int32_t> || std::is_same_v<V, int64_t> ||
    std::is_same_v<V, double>;

// A value as --help and --write-config show it: numbers as numbers (a uint8_t is no character),
// switches as on/off.
template <class V>
std::string flag_value_text(V v) {
  if constexpr (std::is_same_v<V, bool>)
    return v ? "on" : "off";
  else
    return field_value_text(v);
}

// Flags in declaration order. The values they write live in the declaring object, which must
// not move while the list is bound.
class FlagList {
 public:
  FlagDecl& toggle(std::string name, bool& v, std::string help) {
    return add({.name = std::move(name),
                .help = std::move(help),
                .target = &v,
                .shown_default = flag_value_text(v)});
  }
  template <class V>
  requires kFlagNumber<V> FlagDecl& number(std::string name, V& v, std::string help,
                                           std::type_identity_t<V> lo, std::type_identity_t<V> hi) {
    return add({.name = std::move(name),
                .help = std::move(help),
                .target = FlagDecl::Number<V>{&v, lo, hi},
                .shown_default = flag_value_text(v)});
  }
  // A string flag, one of `choices`; none shown as default when `v` is empty.
  FlagDecl& choice(std::string name, std::string& v, std::vector<std::string> choices,
                   std::string help) {
    std::optional<std::string> shown;
    if (!v.empty()) shown = v;
    return add({.name = std::move(name),
                .help = std::move(help),
                .target = &v,
                .choices = std::move(choices),
                .shown_default = shown});
  }
  FlagDecl& named(std::string name, FlagDecl::Named set, std::string shown, std::string help) {
    return add({.name = std::move(name),
                .help = std::move(help),
                .target = std::move(set),
                .shown_default = std::move(shown)});
  }

  std::vector<FlagDecl>& all() { return decls_; }
  const std::vector<FlagDecl>& all() const { return decls_; }
  bool given(std::string_view name) const {
    for (const FlagDecl& d : decls_)
      if (d.name == name) return d.given;
    return false;
  }

 private:
  FlagDecl& add(FlagDecl d) {
    decls_.push_back(std::move(d));
    return decls_.back();
  }
  std::vector<FlagDecl> decls_;
};

}  // namespace dmrt::bench
