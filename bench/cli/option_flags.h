// dmrt-bench's view of an option field list (dmrt/runtime/option_fields.h): one flag per field
// (dmrt-bench's own --keys..., an index's --<index>-*), and an index's fields given on the command
// line applied over derived options.
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

// How declare_fields() spells the flags of one options struct.
struct FieldFlagStyle {
  std::string_view prefix;                         // before each field's flag: "--race-", or "--"
  bool presence_switches = false;                  // --quiet rather than --quiet on|off
  std::span<const std::string_view> derived = {};  // keys whose default --help does not show
};

// One flag per CLI field of `target`, writing straight into it, in the field's --help section.
// Returns each field's flag, "" for a field that has none. `target` must outlive `list`'s binding.
template <HasOptionFields O>
std::vector<std::string> declare_fields(FlagList& list, O& target, const FieldFlagStyle& style) {
  std::vector<std::string> names;
  for_each_field<O>([&](const auto& f) {
    if (!f.cli) {
      names.emplace_back();
      return;
    }
    std::string name = std::string(style.prefix) + field_flag_suffix(f);
    auto& slot = target.*(f.member);
    using V = std::remove_cvref_t<decltype(slot)>;
    FlagDecl* d;
    if constexpr (std::is_same_v<V, bool>) {
      d = &list.toggle(name, slot, std::string(f.help));
      d->presence = style.presence_switches;
    } else if constexpr (std::is_same_v<V, std::string>) {
      std::vector<std::string> choices(f.names, f.names + f.choices);
      d = &list.choice(name, slot, std::move(choices), std::string(f.help));
    } else if constexpr (std::is_enum_v<V>) {
      FlagDecl::Named set{[&slot, f](const std::string& s) { return f.parse_name(s, slot); }, {}};
      for (size_t i = 0; i < f.choices; ++i) set.names.emplace_back(f.names[i]);
      d = &list.named(name, std::move(set), std::string(f.name_of(slot)), std::string(f.help));
    } else {
      static_assert(kFlagNumber<V>, "an option field of a type FlagDecl cannot hold");
      d = &list.number(name, slot, std::string(f.help), f.lo, f.hi);
    }
    if (!f.shows_default ||
        std::find(style.derived.begin(), style.derived.end(), f.key) != style.derived.end())
      d->shown_default.reset();
    d->section = std::string(f.section);
    names.push_back(std::move(name));
  });
  return names;
}

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
    std::string prefix = "--" + std::string(index) + "-";
    names_ = declare_fields(list, values_, {.prefix = prefix, .derived = derived});
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
