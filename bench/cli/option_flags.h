// dmrt-bench's view of an index's option field list (dmrt/runtime/option_fields.h): one --<index>-*
// flag per field, and the fields given on the command line applied over derived options.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bench/cli/flag_list.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt::bench {

// The flags of one index's Options. Only the fields given on the command line are applied, so
// the bench may derive the others (from --cache-mb, the expected keys, a preset step) first.
// The declared flags point into this object: declare() once, and do not move it afterwards.
template <HasOptionFields O>
class OptionFlags {
 public:
  // `shown`: the values --help shows as defaults (the bench's, where they differ from the
  // index's).
  explicit OptionFlags(O shown = O{}) : values_(shown) {}

  // `derived`: keys whose default the bench computes (from the expected keys...); --help shows
  // no default for them, their help says how it is derived.
  void declare(FlagList& list, std::string_view index,
               std::span<const std::string_view> derived = {}) {
    names_.clear();
    for_each_field<O>([&](const auto& f) {
      if (!f.cli) {
        names_.emplace_back();
        return;
      }
      std::string name = "--" + std::string(index) + "-" + field_flag_suffix(f);
      auto& slot = values_.*(f.member);
      using V = std::remove_cvref_t<decltype(slot)>;
      FlagDecl* d;
      if constexpr (std::is_same_v<V, bool>) {
        d = &list.toggle(name, slot, std::string(f.help));
      } else if constexpr (std::is_enum_v<V>) {
        FlagDecl::Named set{[&slot, f](const std::string& s) { return f.parse_name(s, slot); }, {}};
        for (size_t i = 0; i < f.choices; ++i) set.names.emplace_back(f.names[i]);
        d = &list.named(name, std::move(set), std::string(f.name_of(slot)), std::string(f.help));
      } else {
        static_assert(kFlagNumber<V>, "an option field of a type FlagDecl cannot hold");
        d = &list.number(name, slot, std::string(f.help), f.lo, f.hi);
        if (std::find(derived.begin(), derived.end(), f.key) != derived.end())
          d->shown_default.reset();
      }
      names_.push_back(std::move(name));
    });
  }

  // Copies into `o` the fields given on the command line (`list` is the one declare() filled).
  void apply(O& o, const FlagList& list) const {
    size_t i = 0;
    for_each_field<O>([&](const auto& f) {
      const std::string& name = names_[i++];
      if (!name.empty() && list.given(name)) o.*(f.member) = values_.*(f.member);
    });
  }

 private:
  O values_;
  std::vector<std::string> names_;  // per field: its flag, "" when it has none
};

}  // namespace dmrt::bench
