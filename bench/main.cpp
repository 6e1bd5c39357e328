// dmrt-bench: YCSB core workloads over dmrt indexes (and local peers), per-operation round trips,
// verbs and bytes, latency percentiles; a table on stdout and JSON Lines with --json.
// Parse (bench/cli/flags.cpp), resolve (bench/cli/resolve.cpp), dispatch to the chosen index's
// run side (bench/indexes/registry.h).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bench/cli/bind_flags.h"
#include "bench/cli/command_line.h"
#include "bench/cli/resolve.h"
#include "bench/cli/run_limits.h"
#include "bench/cli/trace_cli.h"
#include "bench/driver/interrupt.h"
#include "bench/driver/usage.h"
#include "bench/driver/verify.h"
#include "bench/indexes/registry.h"
#include "bench/indexes/spec.h"
#include "bench/report/compare.h"
#include "bench/report/merge.h"
#include "bench/report/provenance.h"
#include "bench/report/report.h"
#include "bench/transports/registry.h"
#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/placement.h"
#include "dmrt/runtime/scheduler.h"
#include "tools/common/cli_config.h"
#include "tools/common/cli_help.h"

namespace dmrt::bench {

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "dmrt-bench: %s\n", msg.c_str());
  return kUsage;
}

namespace {

// --help-index, --help-transport, --help-all; -1 when none was given.
int print_help_mode(const CLI::App& app, tools::HelpFormatter& help, const CommandLine& c) {
  if (!c.help_index.empty()) {
    const IndexEntry* e = find_index(c.help_index);
    const std::string head = c.help_index + (e->scan ? " [scan]" : "") +
                             (e->byte_keys ? " [bytes]" : "") + (e->local ? " [local]" : "") +
                             ": " + std::string(e->summary);
    std::printf("%s\n%s\n\n", tools::wrap_text(head, 4, 4).c_str(),
                tools::wrap_text("[scan]: serves scans (workloads e, scan). [bytes]: takes "
                                 "byte-string keys (--key-size > 8). [local]: a map in this "
                                 "process, no verbs.",
                                 0)
                    .c_str());
    const std::string section = index_section(*e);
    help.show([&](const std::string& s) { return s == section; });
    std::printf("%s", app.help().c_str());
    return 0;
  }
  if (!c.help_transport.empty()) {
    const std::string section(find_transport(c.help_transport)->title);
    help.show([&](const std::string& s) { return s == section; });
    std::printf("%s", app.help().c_str());
    return 0;
  }
  if (c.help_all) {
    help.show({});
    std::printf("%s", app.help().c_str());
    return 0;
  }
  return -1;
}

// --list-indexes: a line per index, "name scan|- local|-".
int print_list() {
  std::printf("# index\tscan\tlocal\n");
  for (const IndexEntry& e : registered_indexes())
    std::printf("%.*s\t%s\t%s\n", static_cast<int>(e.name.size()), e.name.data(),
                e.scan ? "scan" : "-", e.local ? "local" : "-");
  return 0;
}

// Parse: the command line and --config into `c`. Returns the exit code of what ends here (help,
// a usage error, --merge, --list-indexes, --write-config), or -1 to go on.
int parse(CLI::App& app, tools::HelpFormatter& help, CommandLine& c, int argc, char** argv) {
  add_flags(app, c);
  help.show([](const std::string& s) { return s == kCommonSection; });
  app.footer(
      "More flags: --help-all (every one), --help-index NAME, --help-transport NAME. "
      "docs/bench.md explains each.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ConfigError& e) {
    return usage_error(tools::config_error_text(e));
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kUsage;
  }
  if (int rc = print_help_mode(app, help, c); rc >= 0) return rc;
  tools::warn_overridden(app, argc, argv, "dmrt-bench");
  for (auto& f : c.index_flags) mark_given(app, f->list());
  if (!c.merge.empty()) return merge_reports(c.merge, c.opt.json, c.merge_partial);
  if (c.list) return print_list();
  if (!c.write_config_path.empty()) {
    tools::write_config(app, c.write_config_path);
    return 0;
  }
  return -1;
}

// What validation resolves for one index's run.
struct Run {
  Mix mix;
  const IndexEntry* entry = nullptr;
  ClusterConfig config;
};

// Validate one index's run and resolve what the flags leave open: the index and its flags, the
// cluster, the outputs, the transport's own part, the limits of this machine. "" or the error.
std::string validate_run(CommandLine& c, Run& run) {
  Options& opt = c.opt;
  run.entry = find_index(opt.index);
  if (!run.entry) return "unknown index " + opt.index;
  if (std::string err = resolve_index_flags(c, index_flags_of(c, *run.entry)); !err.empty())
    return err;
  if (opt.verify && !verify_available()) return "--verify: not available in this build";
  if (std::string err = resolve_cluster(c, run.config); !err.empty()) return err;
  if (std::string err = resolve_outputs(c, run.config); !err.empty()) return err;
  // The far-memory flags apply to every memory node, over what a cluster file says (an attached
  // pool's nodes: bench/transports/shm_env.h).
  opt.shm.apply_far_flags(run.config);
  // The transport as compiled in, and its own resolution (sim: every client a fiber of one
  // thread), before the limits and the provenance take the options.
  if (std::string err = resolve_transport(c, run.config); !err.empty()) return err;
  check_limits(opt, run.mix, c.verify_max_ops->count() > 0);
  return "";
}

// Dispatch: place this process, record the provenance, and run the index on its transport.
int dispatch(CommandLine& c, Run& run, int argc, char** argv,
             std::chrono::system_clock::time_point start) {
  Options& opt = c.opt;
  // Where this process runs, before any thread or memory of the run exists.
  if (opt.numa_node >= 0) placement::bind_numa(opt.numa_node);
  if (!opt.cpus.empty()) placement::bind_thread(placement::parse_cpu_list(opt.cpus));
  set_provenance(
      provenance_json(std::vector<std::string>(argv, argv + argc), start, opt, run.config,
                      c.config_file->count() > 0 ? c.config_file->as<std::string>() : ""));
  // From here a signal ends the run at the next operation, and what was measured is written.
  catch_interrupts();
  return run.entry->run(RunRequest{opt.transport, run.entry->name, opt, run.config, run.mix},
                        index_flags_of(c, *run.entry));
}

int main_impl(int argc, char** argv) {
  const auto start = std::chrono::system_clock::now();
  CommandLine c;
  CLI::App app{"dmrt-bench: YCSB workloads over dmrt indexes on disaggregated memory"};
  auto help = tools::use_help_formatter(app);
  if (int rc = parse(app, *help, c, argc, argv); rc >= 0) return rc;

  Run run;
  if (std::string err = resolve_workload(app, c, run.mix); !err.empty()) return usage_error(err);
  if (!c.opt.write_trace.empty()) return write_trace(c.opt, run.mix);
  if (std::string err = resolve_sizes(app, c); !err.empty()) return usage_error(err);
  if (c.compare_opt->count() > 0) {
    for (const char* f : {"--index", "--config", "--attach", "--history"})
      if (app.get_option(f)->count() > 0)
        return usage_error(std::string(f) + " cannot be combined with --compare");
    return run_compare(app, c.flag_groups, argc, argv, c.opt, c.compare, c.compare_rounds);
  }
  if (std::string err = validate_run(c, run); !err.empty()) return usage_error(err);
  return dispatch(c, run, argc, argv, start);
}

}  // namespace
}  // namespace dmrt::bench

int main(int argc, char** argv) {
  try {
    return dmrt::bench::main_impl(argc, argv);
  } catch (const dmrt::WorkerFailure& e) {
    // what() already names the worker and the first error.
    std::fprintf(stderr, "dmrt-bench: %s\n", e.what());
    return 1;
  } catch (const dmrt::ConfigError& e) {
    std::fprintf(stderr, "dmrt-bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dmrt-bench: %s\n", e.what());
    return 1;
  }
}
