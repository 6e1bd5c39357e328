// Option field lists: an options struct (an index's, dmrt-bench's) declares each field once (key,
// member, help, accepted range), and generic code derives validation, command-line flags, JSON
// and TOML from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "dmrt/runtime/error.h"

namespace dmrt {

// The type of a field's range bounds: the field's own for numbers and enums; a string field has
// no range (its choices, if any, are its names).
template <class V>
using OptionLimit = std::conditional_t<std::is_arithmetic_v<V> || std::is_enum_v<V>, V, bool>;

template <class V>
constexpr OptionLimit<V> option_lowest() {
  if constexpr (std::is_arithmetic_v<V> || std::is_enum_v<V>)
    return std::numeric_limits<V>::lowest();
  else
    return false;
}
template <class V>
constexpr OptionLimit<V> option_highest() {
  if constexpr (std::is_arithmetic_v<V> || std::is_enum_v<V>)
    return std::numeric_limits<V>::max();
  else
    return false;
}

// One field of options struct O, of type V (bool, arithmetic, std::string, or an enum named by
// option_choice). `key` is the field's name in JSON and TOML (snake_case); its flag is
// --<prefix><flag>, where `flag` defaults to the key with '-' for '_' and the prefix is the
// index's name and a dash ("" for dmrt-bench's own options). Numbers must lie in [lo, hi];
// booleans have no range; an enum is one of its names (values 0 .. N-1); a string with names is
// one of them, without names any string.
template <class O, class V>
struct OptionField {
  using Owner = O;
  using Value = V;
  std::string_view key;
  V O::*member;
  std::string_view help;
  OptionLimit<V> lo = option_lowest<V>();
  OptionLimit<V> hi = option_highest<V>();
  std::string_view flag = {};  // "" = derived from key
  bool cli = true;             // offered as a flag (false: set by the caller, e.g. sizing)
  const std::string_view* names = nullptr;  // an enum's spelling of each value 0, 1, ...
  size_t choices = 0;                       // how many names
  std::string_view section = {};            // the --help section it is listed in ("" = the owner's)
  bool shows_default = true;                // --help shows its default value
  bool reported = false;                    // a run parameter that every result carries

  // A different flag name than the key gives (kept for flags older than the field list).
  constexpr OptionField named(std::string_view f) const { return with(&OptionField::flag, f); }
  // Not a flag: the bench derives it (sizing, budgets), JSON and TOML still carry it.
  constexpr OptionField no_flag() const { return with(&OptionField::cli, false); }
  // Listed in --help section `s`.
  constexpr OptionField in(std::string_view s) const { return with(&OptionField::section, s); }
  // --help shows no default: the default value stands for "not given", or is derived.
  constexpr OptionField no_default() const { return with(&OptionField::shows_default, false); }
  // A run parameter: every result (dmrt-bench's JSON line per phase) carries it by its key.
  constexpr OptionField report() const { return with(&OptionField::reported, true); }
  constexpr bool has_range() const { return std::is_arithmetic_v<V> && !std::is_same_v<V, bool>; }
  bool in_range(const V& v) const {
    if constexpr (std::is_same_v<V, bool>) {
      return true;
    } else if constexpr (std::is_enum_v<V>) {
      return static_cast<size_t>(v) < choices;
    } else if constexpr (std::is_arithmetic_v<V>) {
      return !(v < lo) && !(hi < v);  // false for NaN, too
    } else {
      if (choices == 0) return true;
      for (size_t i = 0; i < choices; ++i)
        if (names[i] == v) return true;
      return false;
    }
  }
  // An enum value's name ("" when out of range).
  std::string_view name_of(V v) const {
    if constexpr (std::is_enum_v<V>)
      return in_range(v) ? names[static_cast<size_t>(v)] : std::string_view{};
    else
      return {};
  }
  // The enum value spelled `s`; false when no name matches.
  bool parse_name(std::string_view s, V& out) const {
    if constexpr (std::is_enum_v<V>) {
      for (size_t i = 0; i < choices; ++i)
        if (names[i] == s) {
          out = static_cast<V>(i);
          return true;
        }
    }
    return false;
  }
  // "a | b | c", for help texts and errors.
  std::string choice_list() const {
    std::string s;
    for (size_t i = 0; i < choices; ++i) s += (i ? " | " : "") + std::string(names[i]);
    return s;
  }

 private:
  // A copy with one attribute changed: the builders above.
  template <class A>
  constexpr OptionField with(A OptionField::*attribute, A value) const {
    OptionField c = *this;
    c.*attribute = value;
    return c;
  }
};

// A boolean switch.
template <class O>
constexpr OptionField<O, bool> option_switch(std::string_view key, bool O::*m,
                                             std::string_view help) {
  return {key, m, help};
}
// A number accepted in [lo, hi].
template <class O, class V>
constexpr OptionField<O, V> option_number(std::string_view key, V O::*m, std::string_view help,
                                          std::type_identity_t<V> lo, std::type_identity_t<V> hi) {
  return {key, m, help, lo, hi};
}

// One of an enum's values, spelled names[v] (values 0 .. N-1). Flags, JSON and TOML use the names.
template <class O, class E, size_t N>
requires std::is_enum_v<E>
constexpr OptionField<O, E> option_choice(std::string_view key, E O::*m, std::string_view help,
                                          const std::string_view (&names)[N]) {
  OptionField<O, E> f{key, m, help, E{}, E{}};
  f.names = names;
  f.choices = N;
  return f;
}

// Any string.
template <class O>
constexpr OptionField<O, std::string> option_text(std::string_view key, std::string O::*m,
                                                  std::string_view help) {
  return {key, m, help};
}
// A string that is one of `names`.
template <class O, size_t N>
constexpr OptionField<O, std::string> option_text(std::string_view key, std::string O::*m,
                                                  std::string_view help,
                                                  const std::string_view (&names)[N]) {
  OptionField<O, std::string> f{key, m, help};
  f.names = names;
  f.choices = N;
  return f;
}

// The list itself: a tuple of OptionFields, which an options struct returns from
// `static constexpr auto fields()`.
template <class... F>
constexpr auto option_fields(F... f) {
  return std::tuple<F...>{f...};
}

// The fields of `list`, each listed in --help section `s` (a list per section, joined with
// std::tuple_cat).
template <class... F>
constexpr std::tuple<F...> fields_in_section(std::string_view s, const std::tuple<F...>& list) {
  return std::apply([s](const F&... f) { return std::tuple<F...>{f.in(s)...}; }, list);
}

template <class O>
concept HasOptionFields = requires {
  O::fields();
};

template <class O, class Fn>
constexpr void for_each_field(Fn&& fn) {
  std::apply([&](const auto&... f) { (fn(f), ...); }, O::fields());
}

// The flag of a field without its dashes ("directory-cache" for race's directory_cache).
template <class F>
std::string field_flag_suffix(const F& f) {
  if (!f.flag.empty()) return std::string(f.flag);
  std::string s(f.key);
  for (char& c : s)
    if (c == '_') c = '-';
  return s;
}

template <class V>
std::string field_value_text(const V& v) {
  if constexpr (std::is_same_v<V, std::string>) {
    return v;
  } else if constexpr (std::is_same_v<V, bool>) {
    return v ? "true" : "false";
  } else {
    std::ostringstream os;
    os << +v;  // unary + prints small integer types as numbers
    return os.str();
  }
}

// "" when `v` is acceptable for field f, else "<key> must be in [lo, hi] (got v)".
template <class F>
std::string field_range_error(const F& f, const typename F::Value& v) {
  if (f.in_range(v)) return {};
  if constexpr (std::is_same_v<typename F::Value, std::string>)
    return std::string(f.key) + " must be one of " + f.choice_list() + " (got " + v + ")";
  else if constexpr (std::is_enum_v<typename F::Value>)
    return std::string(f.key) + " must be one of " + f.choice_list() + " (got " +
           std::to_string(static_cast<size_t>(v)) + ")";
  else
    return std::string(f.key) + " must be in [" + field_value_text(f.lo) + ", " +
           field_value_text(f.hi) + "] (got " + field_value_text(v) + ")";
}

// The first field of `o` out of its range, as an error text ("" when every field is fine).
template <HasOptionFields O>
std::string check_option_fields(const O& o) {
  std::string err;
  for_each_field<O>([&](const auto& f) {
    if (err.empty()) err = field_range_error(f, o.*(f.member));
  });
  return err;
}

// For an index's validate(): throws ConfigError("<index>: <key> must be in ...") on the first
// field out of range. Checks across fields stay in the index.
template <HasOptionFields O>
void validate_option_fields(std::string_view index, const O& o) {
  std::string err = check_option_fields(o);
  if (!err.empty()) throw ConfigError(std::string(index) + ": " + err);
}

}  // namespace dmrt
