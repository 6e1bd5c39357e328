// An option field list (dmrt/runtime/option_fields.h) as JSON: an index's "index_options", the run
// parameters every result carries, dmrt-bench's options in the provenance.
#pragma once

#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "dmrt/runtime/option_fields.h"

namespace dmrt::bench {

// Every declared field of `o` by key (enums by name; null for a no_default() field left at its
// out-of-range "not given" value); with `reported_only`, the fields declared report() alone.
template <HasOptionFields O>
nlohmann::json option_fields_json(const O& o, bool reported_only = false) {
  nlohmann::json j = nlohmann::json::object();
  for_each_field<O>([&](const auto& f) {
    if (reported_only && !f.reported) return;
    if (!f.shows_default && !f.in_range(o.*(f.member))) {
      j[std::string(f.key)] = nullptr;
      return;
    }
    if constexpr (std::is_enum_v<typename std::remove_cvref_t<decltype(f)>::Value>)
      j[std::string(f.key)] = f.name_of(o.*(f.member));
    else
      j[std::string(f.key)] = o.*(f.member);
  });
  return j;
}

}  // namespace dmrt::bench
