// Declared flags as CLI11 options (bench/cli/bind_flags.h).
#include "bench/cli/bind_flags.h"

#include <type_traits>
#include <variant>

namespace dmrt::bench {

CLI::Option* add_switch(CLI::App& g, const std::string& name, bool& flag, const std::string& help) {
  return g.add_option(name, flag, help)->type_name("on|off")->default_str(flag ? "on" : "off");
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : " | ") + n;
  return s;
}

CLI::Option* bind(CLI::App& g, FlagDecl& d) {
  return std::visit(
      [&](auto& t) -> CLI::Option* {
        using Target = std::remove_cvref_t<decltype(t)>;
        if constexpr (std::is_same_v<Target, bool*>) {
          if (d.presence) return g.add_flag(d.name, *t, d.help);
          return add_switch(g, d.name, *t, d.help);
        } else if constexpr (std::is_same_v<Target, std::string*>) {
          CLI::Option* o = g.add_option(d.name, *t, d.help);
          // A choice is matched without case and stored as listed (--workload A is a).
          if (!d.choices.empty()) o->check(CLI::IsMember(d.choices, CLI::ignore_case));
          return o;
        } else if constexpr (std::is_same_v<Target, FlagDecl::Named>) {
          const std::string choices = joined(t.names);
          auto set = t.set;
          return g
              .add_option_function<std::string>(
                  d.name,
                  [set, choices, name = d.name](const std::string& s) {
                    if (!set(s)) throw CLI::ValidationError(name, "must be one of " + choices);
                  },
                  d.help)
              ->type_name(choices);
        } else {
          return g.add_option(d.name, *t.value, d.help)->check(CLI::Range(t.lo, t.hi));
        }
      },
      d.target);
}

}  // namespace

void bind_flags(CLI::App& g, FlagList& list) {
  for (FlagDecl& d : list.all()) {
    CLI::Option* o = bind(g, d);
    if (d.shown_default && !d.presence) o->default_str(*d.shown_default);
    if (!d.section.empty()) o->group(d.section);
  }
}

void mark_given(const CLI::App& g, FlagList& list) {
  for (FlagDecl& d : list.all()) {
    const CLI::Option* o = g.get_option_no_throw(d.name);
    d.given = o && o->count() > 0;
  }
}

}  // namespace dmrt::bench
