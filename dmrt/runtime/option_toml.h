// Reads an options struct's declared fields (dmrt/runtime/option_fields.h) from a TOML table, with
// the same ranges as every other way of setting them, so that a config file is checked like flags.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include <toml++/toml.h>

#include "dmrt/runtime/error.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt {

// Sets every field of `o` that `table` names; fields it leaves out keep their value. `where`
// names the table in errors ("[chime]"). A key that is no field, a value of the wrong type or one
// out of its field's range throws ConfigError naming the field.
template <HasOptionFields O>
void read_option_fields(const toml::table& table, O& o, std::string_view where) {
  const std::string at = std::string(where) + ".";
  for (const auto& [k, node] : table) {
    bool known = false;
    for_each_field<O>([&](const auto& f) {
      if (known || k.str() != f.key) return;
      known = true;
      using V = typename std::remove_cvref_t<decltype(f)>::Value;
      V v{};
      if constexpr (std::is_same_v<V, bool>) {
        auto b = node.template value_exact<bool>();
        if (!b) throw ConfigError(at + std::string(f.key) + " must be true or false");
        v = *b;
      } else if constexpr (std::is_same_v<V, std::string>) {
        auto t = node.template value_exact<std::string>();
        if (!t) throw ConfigError(at + std::string(f.key) + " must be a string");
        v = *t;
      } else if constexpr (std::is_enum_v<V>) {
        auto t = node.template value_exact<std::string>();
        if (!t || !f.parse_name(*t, v))
          throw ConfigError(at + std::string(f.key) + " must be one of " + f.choice_list());
      } else if constexpr (std::is_floating_point_v<V>) {
        auto d = node.template value<double>();  // integers are accepted as numbers too
        if (!d) throw ConfigError(at + std::string(f.key) + " must be a number");
        v = static_cast<V>(*d);
      } else {
        auto i = node.template value_exact<int64_t>();
        if (!i) throw ConfigError(at + std::string(f.key) + " must be an integer");
        // A negative or too large integer is reported against the field's range, not wrapped.
        if (*i < 0 && !std::is_signed_v<V>)
          throw ConfigError(at + std::string(f.key) + " must be in [" + field_value_text(f.lo) +
                            ", " + field_value_text(f.hi) + "] (got " + std::to_string(*i) + ")");
        if (std::is_signed_v<V> ? (*i < int64_t(std::numeric_limits<V>::lowest()) ||
                                   *i > int64_t(std::numeric_limits<V>::max()))
                                : uint64_t(*i) > uint64_t(std::numeric_limits<V>::max()))
          throw ConfigError(at + std::string(f.key) + " must be in [" + field_value_text(f.lo) +
                            ", " + field_value_text(f.hi) + "] (got " + std::to_string(*i) + ")");
        v = static_cast<V>(*i);
      }
      std::string err = field_range_error(f, v);
      if (!err.empty()) throw ConfigError(at + err);
      o.*(f.member) = v;
    });
    if (!known) throw ConfigError(at + std::string(k.str()) + " is not an option of this index");
  }
}

}  // namespace dmrt
