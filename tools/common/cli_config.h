// --config FILE for the dmrt tools: CLI11 reads its options from a TOML file parsed by toml++
// (real TOML: escapes, 1_000_000, multi-line arrays, errors with line and column), while the
// command line still wins over the file and --write-config writes CLI11's own TOML back.
#pragma once

#include <toml++/toml.h>
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace dmrt::tools {

// Keys are the long flag names without "--" (`keys = 1_000_000`, `shm-latency-ns = 300`), flags
// are booleans (`verify = true`), repeatable flags arrays (`service = ["rolex"]`). A table
// [name] stands for a CLI11 subcommand; the tools have none, so their files are flat.
class TomlConfig : public CLI::ConfigTOML {
 public:
  // A configuration is a page of flags: a file past this (/dev/zero, a log given by mistake) is
  // refused after reading this much, not read until memory runs out.
  static constexpr size_t kMaxBytes = size_t{4} << 20;

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::string text;
    char buf[1 << 14];
    while (input.read(buf, sizeof buf) || input.gcount() > 0) {
      text.append(buf, static_cast<size_t>(input.gcount()));
      if (text.size() > kMaxBytes)
        throw CLI::ConversionError("--config: the file is larger than " +
                                   std::to_string(kMaxBytes >> 20) +
                                   " MiB: not a configuration (flags as TOML keys)");
    }
    toml::table table;
    try {
      table = toml::parse(text);
    } catch (const toml::parse_error& e) {
      const auto& at = e.source().begin;
      throw CLI::ConversionError("--config: line " + std::to_string(at.line) + ", column " +
                                 std::to_string(at.column) + ": " + std::string(e.description()));
    }
    std::vector<CLI::ConfigItem> items;
    add(table, {}, items);
    return items;
  }

 private:
  static std::string where(const std::vector<std::string>& parents, const std::string& key) {
    std::string s;
    for (const std::string& p : parents) s += p + ".";
    return s + key;
  }

  // One TOML value as CLI11 input text; nullopt for what no flag takes (tables in arrays, dates).
  static std::optional<std::string> scalar(const toml::node& n) {
    if (auto s = n.as_string()) return s->get();
    if (auto i = n.as_integer()) return std::to_string(i->get());
    if (auto b = n.as_boolean()) return std::string(b->get() ? "true" : "false");
    if (auto f = n.as_floating_point()) {
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof buf, f->get());  // shortest round-trip form
      return std::string(buf, r.ptr);
    }
    return std::nullopt;
  }

  static void add(const toml::table& table, const std::vector<std::string>& parents,
                  std::vector<CLI::ConfigItem>& items) {
    for (const auto& [k, node] : table) {
      const std::string key(k.str());
      if (const toml::table* sub = node.as_table()) {
        std::vector<std::string> p = parents;
        p.push_back(key);
        add(*sub, p, items);
        continue;
      }
      CLI::ConfigItem item;
      item.parents = parents;
      item.name = key;
      if (const toml::array* arr = node.as_array()) {
        for (const toml::node& e : *arr) {
          auto v = scalar(e);
          if (!v)
            throw CLI::ConversionError("--config: " + where(parents, key) +
                                       ": array elements must be strings, numbers or booleans");
          item.inputs.push_back(*v);
        }
      } else if (auto v = scalar(node)) {
        item.inputs.push_back(*v);
      } else {
        throw CLI::ConversionError("--config: " + where(parents, key) +
                                   ": a value must be a string, number, boolean or array");
      }
      items.push_back(std::move(item));
    }
  }
};

// Adds --config FILE (read with TomlConfig; unknown keys are errors, not ignored) and
// --write-config FILE to `app`. Returns the --config option (its value names the file).
inline CLI::Option* add_config_flags(CLI::App& app, std::string& write_config_path) {
  app.config_formatter(std::make_shared<TomlConfig>());
  app.allow_config_extras(CLI::config_extras_mode::error);
  CLI::Option* config =
      app.set_config("--config", "",
                     "Read flags from this TOML file (keys: the long flag names without --, "
                     "e.g. keys = 1_000_000); the command line overrides it")
          ->check(CLI::ExistingFile)
          ->type_name("FILE");
  app.add_option("--write-config", write_config_path,
                 "Write the flags given (command line and --config) to FILE as TOML, then exit")
      ->type_name("FILE")
      ->configurable(false);
  return config;
}

// The flags given (command line and --config) as TOML text; --config and --write-config are left
// out. Throws std::runtime_error when the file cannot be written.
inline void write_config(const CLI::App& app, const std::string& path) {
  const std::string text = app.config_to_str(false, false);
  std::ofstream f(path, std::ios::trunc);
  f << text;
  f.flush();
  if (!f) throw std::runtime_error("cannot write --write-config file " + path);
}

// The flags that both --config's file and the command line give: the command line wins, and
// each is named on stderr ("dmrt-bench: --keys on the command line overrides keys = 10 in
// FILE"), so that a run never differs silently from the file it was started with.
inline void warn_overridden(const CLI::App& app, int argc, char** argv, const char* tool) {
  const CLI::Option* config = app.get_option_no_throw("--config");
  if (!config || config->count() == 0) return;
  const std::string file = config->as<std::string>();
  std::vector<CLI::ConfigItem> items;
  try {
    std::ifstream in(file);
    items = TomlConfig().from_config(in);
  } catch (const std::exception&) {
    return;  // parsing it already succeeded once; nothing to add
  }
  for (const CLI::ConfigItem& item : items) {
    if (!item.parents.empty()) continue;
    const std::string flag = "--" + item.name;
    for (int k = 1; k < argc; ++k) {
      const std::string a = argv[k];
      if (a == flag || a.rfind(flag + "=", 0) == 0) {
        std::string value;
        for (const std::string& v : item.inputs) value += (value.empty() ? "" : ", ") + v;
        std::fprintf(stderr, "%s: %s on the command line overrides %s = %s in %s\n", tool,
                     flag.c_str(), item.name.c_str(), value.c_str(), file.c_str());
        break;
      }
    }
  }
}

// A ConfigError about a key no flag has reads "INI was not able to parse KEY" in CLI11; say what
// it means instead.
inline std::string config_error_text(const CLI::Error& e) {
  std::string msg = e.what();
  const std::string prefix = "INI was not able to parse ";
  if (msg.rfind(prefix, 0) == 0)
    return "--config: unknown key '" + msg.substr(prefix.size()) + "' (no flag --" +
           msg.substr(prefix.size()) + ")";
  return msg;
}

}  // namespace dmrt::tools
