// Help text that fits an 80-column terminal, for every dmrt tool: a CLI11 formatter that wraps
// descriptions, shows a value's kind and default briefly, and prints only the sections asked
// for (dmrt-bench --help: the common flags; --help-index NAME: one index's flags).
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dmrt::tools {

inline constexpr size_t kHelpWidth = 80;
inline constexpr size_t kHelpIndent = 28;  // where a description starts

// `text` wrapped at kHelpWidth. `used` columns of the current line are already written; the
// first word starts at column max(used, indent), later lines at `indent`. A newline in `text`
// starts a new line (at `indent`).
inline std::string wrap_text(std::string_view text, size_t indent, size_t used = 0) {
  std::string out;
  bool first = true;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    std::istringstream words{std::string(text.substr(at, nl - at))};
    if (!first) {
      out += "\n" + std::string(indent, ' ');
      used = indent;
    }
    bool line_start = true;
    std::string w;
    while (words >> w) {
      if (line_start) {
        const size_t start = std::max(used, indent);
        out += std::string(start - used, ' ') + w;
        used = start + w.size();
        line_start = false;
      } else if (used + 1 + w.size() > kHelpWidth) {
        out += "\n" + std::string(indent, ' ') + w;
        used = indent + w.size();
      } else {
        out += " " + w;
        used += 1 + w.size();
      }
    }
    first = false;
    at = nl + 1;
  }
  return out;
}

// A value's kind for the left column: a name the flag gave (FILE, NAME), a short list of
// choices, N, X or TEXT; then its default. Nothing for a switch.
inline std::string option_value_text(const CLI::Option* o) {
  const std::string type = o->get_type_name();
  if (type.empty() || o->get_type_size() == 0) return "";
  const std::string base = type.substr(0, type.find(':'));
  const size_t brace = type.find('{');
  std::string shown;
  if (base != "TEXT" && base != "UINT" && base != "INT" && base != "FLOAT" && base != "ENUM" &&
      !base.empty() && base.find('{') == std::string::npos) {
    shown = base;  // as the flag named it: FILE, NAME, on|off, auto | versions | checksum
  } else if (brace != std::string::npos) {
    shown = type.substr(brace, type.find('}', brace) - brace + 1);
    if (shown.size() > 30) shown = "NAME";  // a long list: the description names them
  } else if (base == "UINT" || base == "INT") {
    shown = "N";
  } else if (base == "FLOAT") {
    shown = "X";
  } else {
    shown = "TEXT";
  }
  const std::string def = o->get_default_str();
  if (!def.empty()) shown += "=" + def;
  return shown;
}

// The sections of an app: its own options by group, then its option groups, in the order they
// were added. Positionals and hidden options (empty group) are left out.
inline std::vector<std::pair<std::string, std::vector<const CLI::Option*>>> help_sections(
    const CLI::App& app) {
  std::vector<std::pair<std::string, std::vector<const CLI::Option*>>> out;
  auto add = [&](const std::string& group, const CLI::Option* o) {
    if (group.empty() || o->get_positional()) return;
    for (auto& [g, opts] : out)
      if (g == group) {
        opts.push_back(o);
        return;
      }
    out.push_back({group, {o}});
  };
  for (const CLI::Option* o : app.get_options()) add(o->get_group(), o);
  for (const CLI::App* sub :
       app.get_subcommands([](const CLI::App* s) { return s->get_name().empty(); }))
    for (const CLI::Option* o : sub->get_options())
      if (o != sub->get_help_ptr()) add(sub->get_group(), o);  // a group's own copy of --help
  return out;
}

// One option: "  --name VALUE" then its description, wrapped.
inline std::string help_option(const CLI::Option* o) {
  std::string left = "  " + o->get_name(false, true);
  const std::string value = option_value_text(o);
  if (!value.empty()) left += " " + value;
  std::string desc = o->get_description();
  std::string out;
  if (left.size() + 2 <= kHelpIndent) {
    out = left + wrap_text(desc, kHelpIndent, left.size());
  } else {
    out = "  " + wrap_text(std::string_view(left).substr(2), 6, 2) + "\n" +
          wrap_text(desc, kHelpIndent, 0);
  }
  return out + "\n";
}

// The formatter: description, usage, the sections `show` accepts, the footer.
class HelpFormatter : public CLI::Formatter {
 public:
  using Filter = std::function<bool(const std::string& section)>;
  void show(Filter f) { show_ = std::move(f); }

  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode) const override {
    std::string out = wrap_text(app->get_description(), 0) + "\n";
    out += "Usage: " + name + " [OPTIONS]";
    for (const CLI::Option* o : app->get_options())
      if (o->get_positional()) out += " " + o->get_name();
    out += "\n";
    for (const auto& [section, opts] : help_sections(*app)) {
      if (show_ && !show_(section)) continue;
      out += "\n" + section + ":\n";
      for (const CLI::Option* o : opts) out += help_option(o);
    }
    for (const CLI::Option* o : app->get_options())
      if (o->get_positional()) out += "\n" + help_option(o);
    const std::string footer = app->get_footer();
    if (!footer.empty()) out += "\n" + wrap_text(footer, 0) + "\n";
    return out;
  }

 private:
  Filter show_;
};

// Installs the formatter on `app` (and its option groups, which share it); returns it, so that
// a tool can narrow what --help shows.
inline std::shared_ptr<HelpFormatter> use_help_formatter(CLI::App& app) {
  auto f = std::make_shared<HelpFormatter>();
  app.formatter(f);
  return f;
}

}  // namespace dmrt::tools
