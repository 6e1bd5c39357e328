// dmrt-bench's view of an index's option field list (runtime/option_fields.h): one --<index>-*
// flag per field, and the fields given on the command line applied over derived options.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/adapter.h"
#include "runtime/option_fields.h"

namespace dmrt::bench {

// `--name on|off` bound to `flag`. CLI11 also accepts true/false, yes/no and 1/0.
inline CLI::Option* add_switch(CLI::App& g, const std::string& name, bool& flag,
                               const std::string& help) {
  return g.add_option(name, flag, help)->type_name("on|off")->default_str(flag ? "on" : "off");
}

// The flags of one index's Options. Only the fields given on the command line are applied, so
// the bench may derive the others (from --cache-mb, the expected keys, a preset step) first.
// Bound by reference into CLI11: add() once, and do not move the object afterwards.
template <HasOptionFields O>
class OptionFlags {
 public:
  // `shown`: the values --help shows as defaults (the bench's, where they differ from the
  // index's).
  explicit OptionFlags(O shown = O{}) : values_(shown) {}

  // `derived`: keys whose default the bench computes (from the expected keys...); --help shows
  // no default for them, their help says how it is derived.
  void add(CLI::App& g, std::string_view index, std::span<const std::string_view> derived = {}) {
    given_.clear();
    for_each_field<O>([&](const auto& f) {
      if (!f.cli) {
        given_.push_back(nullptr);
        return;
      }
      const std::string name = "--" + std::string(index) + "-" + field_flag_suffix(f);
      auto& slot = values_.*(f.member);
      using V = std::remove_cvref_t<decltype(slot)>;
      CLI::Option* opt;
      if constexpr (std::is_same_v<V, bool>) {
        opt = add_switch(g, name, slot, std::string(f.help));
      } else if constexpr (std::is_enum_v<V>) {
        opt = g.add_option_function<std::string>(
                   name,
                   [&slot, f, name](const std::string& s) {
                     if (!f.parse_name(s, slot))
                       throw CLI::ValidationError(name, "must be one of " + f.choice_list());
                   },
                   std::string(f.help))
                  ->type_name(f.choice_list())
                  ->default_str(std::string(f.name_of(slot)));
      } else {
        opt = g.add_option(name, slot, std::string(f.help))->check(CLI::Range(f.lo, f.hi));
        if (std::find(derived.begin(), derived.end(), f.key) == derived.end())
          opt->capture_default_str();
      }
      given_.push_back(opt);
    });
  }

  // Copies into `o` the fields given on the command line.
  void apply(O& o) const {
    size_t i = 0;
    for_each_field<O>([&](const auto& f) {
      const CLI::Option* opt = i < given_.size() ? given_[i] : nullptr;
      ++i;
      if (opt && opt->count() > 0) o.*(f.member) = values_.*(f.member);
    });
  }

 private:
  O values_;
  std::vector<const CLI::Option*> given_;  // per field: its flag, null when it has none
};

}  // namespace dmrt::bench
