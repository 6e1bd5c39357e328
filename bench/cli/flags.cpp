// Every dmrt-bench flag: Options' fields (bench/cli/options.h), the modes that end before a run,
// each transport's and each index's flags. The common section is what --help shows in 80 columns;
// the others are --help-all's, and each index's and transport's are --help-index NAME's and
// --help-transport NAME's.
#include <string>
#include <vector>

#include "bench/cli/bind_flags.h"
#include "bench/cli/command_line.h"
#include "bench/cli/option_flags.h"
#include "bench/transports/registry.h"
#include "tools/common/cli_config.h"
#include "tools/common/cli_numbers.h"
#include "tools/common/version.h"

namespace dmrt::bench {

std::string index_section(const IndexEntry& e) {
  return std::string(e.title) + " (--index " + std::string(e.name) + ")";
}

namespace {

std::vector<std::string> transport_names() {
  std::vector<std::string> names;
  for (const TransportEntry& t : registered_transports()) names.emplace_back(t.name);
  return names;
}

std::string index_list() {
  std::string s;
  for (const IndexEntry& e : registered_indexes())
    s += (s.empty() ? "" : ", ") + std::string(e.name);
  return s;
}

// Options' fields (bench/cli/options.h) as flags, in their sections.
void add_options(CLI::App& app, CommandLine& c) {
  Options& opt = c.opt;
  opt.index = std::string(registered_indexes().front().name);
  declare_fields(c.option_flags, opt, {.prefix = "--", .presence_switches = true});
  bind_flags(app, c.option_flags);
  auto flag = [&](const char* name) { return app.get_option(name); };

  // What only this build knows: its indexes, and what names each value.
  std::vector<std::string> names;
  for (const IndexEntry& e : registered_indexes()) names.emplace_back(e.name);
  flag("--index")
      ->check(CLI::IsMember(names))
      ->description("Index to measure: " + index_list() +
                    " (--list-indexes; --help-index NAME: "
                    "what it is, its flags)")
      ->type_name("NAME");
  flag("--transport")->type_name("NAME");
  flag("--workload")->type_name("W");
  flag("--distribution")->type_name("D");
  for (const char* f :
       {"--json", "--history", "--trace-load", "--trace-run", "--cluster", "--merged-json"})
    flag(f)->type_name("FILE");
  flag("--write-trace")->type_name("DIR");
  flag("--cpus")->type_name("LIST");

  // Between flags: what a flag needs, excludes, or must name.
  CLI::Option* verify = flag("--verify");
  for (const char* f : {"--history", "--verify-max-ops", "--verify-seconds", "--verify-memory-mb"})
    flag(f)->needs(verify);
  flag("--seconds")->excludes(flag("--ops"));
  for (const char* f : {"--memory-nodes", "--memory-mb", "--compute-mb", "--nodes"})
    flag(f)->excludes(flag("--cluster"));
  for (const char* f : {"--trace-load", "--trace-run", "--cluster"})
    flag(f)->check(CLI::ExistingFile);
  flag("--write-trace")->check(CLI::ExistingDirectory)->excludes(flag("--trace-load"));
  flag("--trace-run")->needs(flag("--trace-load"));

  c.ops = flag("--ops");
  c.dist = flag("--distribution");
  c.key_format = flag("--key-format");
  c.cluster = flag("--cluster");
  c.memory_nodes = flag("--memory-nodes");
  c.memory_mb = flag("--memory-mb");
  c.compute_mb = flag("--compute-mb");
  c.compute = flag("--compute-nodes");
  c.stall = flag("--stall-seconds");
  c.verify_max_ops = flag("--verify-max-ops");
}

// The flags that are no option of a run: the modes that end before one, and help.
void add_modes(CLI::App& app, CommandLine& c) {
  std::vector<std::string> names;
  for (const IndexEntry& e : registered_indexes()) names.emplace_back(e.name);
  c.compare_opt = app.add_option("--compare", c.compare,
                                 "Run these indexes (comma-separated, or all) side by side, "
                                 "interleaved, best of --compare-rounds each")
                      ->type_name("LIST");
  app.add_flag("--list-indexes", c.list,
               "Print this build's indexes, a line each (name, scan or -, local or -), then exit");
  c.config_file = tools::add_config_flags(app, c.write_config_path);
  tools::add_version_flag(app, "dmrt-bench");
  app.add_option("--help-index", c.help_index, "Print what index NAME is, and its flags")
      ->check(CLI::IsMember(names))
      ->type_name("NAME")
      ->configurable(false);
  app.add_option("--help-transport", c.help_transport, "Print the flags of transport NAME")
      ->check(CLI::IsMember(transport_names()))
      ->type_name("NAME")
      ->configurable(false);
  app.add_flag("--help-all", c.help_all, "Print every flag")->configurable(false);
  const std::string cluster(kClusterSection);
  app.add_option("--merge", c.merge,
                 "Merge the JSON files of the processes of one multi-process run into "
                 "one report per phase (to --json FILE, or a table), then exit")
      ->check(CLI::ExistingFile)
      ->group(cluster);
  app.add_flag("--merge-partial", c.merge_partial,
               "--merge: merge the parts given even when some of the run's compute processes "
               "are missing")
      ->group(cluster);
  app.add_option("--compare-rounds", c.compare_rounds, "--compare: rounds (best of N per index)")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str()
      ->needs(c.compare_opt)
      ->group(std::string(kChecksSection));
}

// Each transport's flags, in its own section (bench/transports/NAME.cpp).
void add_transports(CLI::App& app, CommandLine& c) {
  for (const TransportEntry& t : registered_transports()) t.add_flags(app, c);
}

// One section per index with flags; their flags are refused unless --index names that index.
void add_indexes(CLI::App& app, CommandLine& c) {
  for (const IndexEntry& e : registered_indexes()) {
    c.index_flags.push_back(e.make_flags(e.name));
    FlagList& list = c.index_flags.back()->list();
    if (list.all().empty()) continue;
    CLI::App* g = app.add_option_group(index_section(e));
    bind_flags(*g, list);
    c.flag_groups.emplace_back(std::string(e.name), g);
  }
}

}  // namespace

void add_flags(CLI::App& app, CommandLine& c) {
  app.set_help_flag("-h,--help", "Print the common flags and exit");
  add_options(app, c);
  add_modes(app, c);
  add_transports(app, c);
  add_indexes(app, c);
  // Every numeric flag, on the command line and in --config: no wrapped negatives, no NaN.
  tools::strict_numbers(app);
}

}  // namespace dmrt::bench
