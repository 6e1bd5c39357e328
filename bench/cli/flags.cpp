// Every dmrt-bench flag, by --help section (bench/cli/command_line.h). The common section is
// what --help shows in 80 columns; the others are --help-all's, and each index's and
// transport's are --help-index NAME's and --help-transport NAME's.
#include <string>
#include <vector>

#include "bench/cli/bind_flags.h"
#include "bench/cli/command_line.h"
#include "bench/cli/run_limits.h"
#include "bench/cli/trace_cli.h"
#include "bench/transports/registry.h"
#include "bench/workload/key_codec.h"
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

void add_common(CLI::App& app, CommandLine& c) {
  Options& opt = c.opt;
  std::vector<std::string> names;
  for (const IndexEntry& e : registered_indexes()) names.emplace_back(e.name);
  opt.index = names.front();
  app.add_option("--index", opt.index,
                 "Index to measure: " + index_list() +
                     " (--list-indexes; --help-index NAME: what it is, its flags)")
      ->check(CLI::IsMember(names))
      ->type_name("NAME")
      ->capture_default_str();
  app.add_option("--transport", opt.transport,
                 "shm (shared memory), sim (a simulated cluster), verbs (RDMA), as compiled in; "
                 "--help-transport NAME: its flags")
      ->type_name("NAME")
      ->capture_default_str();
  app.add_option("--workload", opt.workload,
                 "YCSB a, b, c, d, e, f, or load (the load phase alone); after the load: "
                 "update, insert, scan")
      ->check(CLI::IsMember({"load", "a", "b", "c", "d", "e", "f", "update", "insert", "scan"},
                            CLI::ignore_case))
      ->type_name("W")
      ->capture_default_str();
  app.add_option("--keys", opt.keys, "Records inserted by the load phase")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  c.ops = app.add_option("--ops", opt.ops, "Run-phase operations, all clients together")
              ->check(CLI::Range(uint64_t{1}, ~uint64_t{0}))
              ->capture_default_str();
  app.add_option("--seconds", opt.seconds,
                 "Run phase length in seconds of the transport clock, instead of --ops (at "
                 "most 1e7)")
      ->check(CLI::Range(1e-6, kMaxSeconds))
      ->excludes(c.ops);
  app.add_option("--threads", opt.threads, "OS threads")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  app.add_option("--fibers", opt.fibers, "Client fibers per thread")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  c.dist = app.add_option("--distribution", opt.distribution,
                          "Key popularity: zipfian (scrambled), uniform, latest (default "
                          "zipfian; workload d: latest)")
               ->check(CLI::IsMember({"zipfian", "uniform", "latest"}, CLI::ignore_case))
               ->type_name("D");
  app.add_option("--zipf-theta", opt.zipf_theta, "Zipfian skew theta, in (0, 1)")
      ->check(CLI::Range(0.01, 0.9999))
      ->capture_default_str();
  app.add_option("--value-size", opt.value_size, "Value bytes")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--key-size", opt.key_size,
                 "Key bytes: 8 = integer keys; 9 to " + std::to_string(kMaxKeyBytes) +
                     " = byte strings (indexes whose --help-index says [bytes])")
      ->check(CLI::Range(kIntegerKeyBytes, kMaxKeyBytes))
      ->capture_default_str();
  app.add_option("--cache-mb", opt.cache_mb,
                 "Compute-side cache MiB per compute node (chime, sherman, dmtree internal "
                 "nodes; 0 = the index default)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", opt.seed, "Random seed (op mix and keys)")->capture_default_str();
  app.add_option("--json", opt.json,
                 "Append one JSON line per phase to FILE (- = stdout; {node} = this process's "
                 "node id)")
      ->type_name("FILE");
  app.add_flag("--quiet", opt.quiet, "No table on stdout");
  app.add_flag("--verify", opt.verify, "Record a history and check it for linearizability");
  app.add_option("--history", opt.history,
                 "With --verify: also save the history to FILE, for dmrt-check")
      ->type_name("FILE")
      ->needs(app.get_option("--verify"));
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
}

void add_workload(CLI::App& app, CommandLine& c) {
  Options& opt = c.opt;
  const std::string g = kWorkloadSection;
  c.key_format =
      app.add_option("--key-format", opt.key_format,
                     "With --key-size > 8: user (\"user\" + the key's 20 zero-padded digits, then "
                     "letters; needs --key-size >= 24) or random (the key's 8 bytes big-endian, "
                     "then pseudo-random bytes of any value); both keep the integer keys' order")
          ->check(CLI::IsMember({"user", "random"}))
          ->capture_default_str()
          ->group(g);
  app.add_option("--key-order", opt.key_order,
                 "Record -> key map: hashed (bijective 64-bit mix; key sets: shuffled) or ordered "
                 "(record + 1; key sets: ascending)")
      ->check(CLI::IsMember({"hashed", "ordered"}))
      ->capture_default_str()
      ->group(g);
  app.add_option(
         "--keyset", opt.keyset,
         "Keys the records stand for: ycsb (the --key-order map over 64-bit keys), or a "
         "learned-index key set: uniform, normal, lognormal, seqgaps (sequential with gaps)")
      ->check(CLI::IsMember({"ycsb", "uniform", "normal", "lognormal", "seqgaps"}))
      ->capture_default_str()
      ->group(g);
  add_trace_flags(app, opt, g);
}

void add_cluster(CLI::App& app, CommandLine& c) {
  Options& opt = c.opt;
  const std::string g = kClusterSection;
  c.cluster = app.add_option("--cluster", opt.cluster, "TOML cluster file (default: embedded)")
                  ->check(CLI::ExistingFile)
                  ->group(g);
  c.memory_nodes =
      app.add_option("--memory-nodes", opt.memory_nodes, "Memory nodes of the embedded cluster")
          ->check(CLI::Range(1u, 1024u))
          ->excludes(c.cluster)
          ->capture_default_str()
          ->group(g);
  c.memory_mb = app.add_option("--memory-mb", opt.memory_mb,
                               "Region MiB per memory node of the embedded cluster")
                    ->check(CLI::Range(uint64_t{64}, uint64_t{1} << 24))
                    ->excludes(c.cluster)
                    ->capture_default_str()
                    ->group(g);
  const std::string compute_help =
      "Compute nodes; clients are homed round-robin over them (shm: of the embedded cluster; "
      "sim: simulated, each with --clients-per-node clients)";
  // Each transport's flags, in its own section (bench/transports/NAME.cpp).
  for (const TransportEntry& t : registered_transports()) t.add_flags(app, c);
  // The simulator owns --compute-nodes when it is built; it also sizes shm's embedded cluster,
  // so it is listed here.
  c.compute = app.get_option_no_throw("--compute-nodes");
  if (c.compute)
    c.compute->description(compute_help)->group(g);
  else
    c.compute = app.add_option("--compute-nodes", opt.compute_nodes, compute_help)
                    ->check(CLI::Range(1u, 1024u))
                    ->capture_default_str()
                    ->group(g);
  app.add_flag("--stop-nodes", opt.stop_nodes,
               "verbs, shm --attach: stop the memory nodes (dmrt-node) once every compute process "
               "is done (the first compute node asks them)")
      ->group(g);
  app.add_option("--node", opt.node,
                 "verbs, shm --attach: this process's node id in the cluster (verbs default: "
                 "with --cluster or --nodes, the rank a launcher gives, OMPI_COMM_WORLD_RANK, "
                 "PMIX_RANK, PMI_RANK, MV2_COMM_WORLD_RANK or SLURM_PROCID; else the cluster's "
                 "compute node)")
      ->check(CLI::Range(0, 65535))
      ->group(g);
  app.add_option("--cpus", opt.cpus,
                 "Bind this process to these CPUs (a list such as 0-3,6), its threads one CPU each "
                 "in turn; reported in the JSON (placement)")
      ->group(g);
  app.add_option("--numa-node", opt.numa_node,
                 "Run this process on the CPUs of this NUMA node and allocate its memory there "
                 "(numa_run_on_node); reported in the JSON (placement)")
      ->check(CLI::Range(0, 1023))
      ->group(g);
  app.add_option("--attach-wait-seconds", opt.attach_wait_seconds,
                 "Several compute processes (shm --attach, verbs with a cluster): seconds to wait "
                 "for the index and for the other compute processes at each barrier")
      ->check(CLI::Range(0.1, 1e6))
      ->capture_default_str()
      ->group(g);
  app.add_option("--peer-timeout-seconds", opt.peer_timeout_seconds,
                 "Several compute processes: a peer whose heartbeat stops this long is lost; the "
                 "others end with an error naming it")
      ->check(CLI::Range(0.5, 1e6))
      ->capture_default_str()
      ->group(g);
  app.add_option("--merged-json", opt.merged_json,
                 "Several compute processes: the first compute node, once all are done, merges "
                 "every node's --json part (a FILE with {node}) into this file")
      ->group(g);
  app.add_option("--merge", c.merge,
                 "Merge the JSON files of the processes of one multi-process run into "
                 "one report per phase (to --json FILE, or a table), then exit")
      ->check(CLI::ExistingFile)
      ->group(g);
  app.add_flag("--merge-partial", c.merge_partial,
               "--merge: merge the parts given even when some of the run's compute processes "
               "are missing")
      ->group(g);
}

void add_checks(CLI::App& app, CommandLine& c) {
  Options& opt = c.opt;
  const std::string g = kChecksSection;
  CLI::Option* verify = app.get_option("--verify");
  c.verify_max_ops = app.add_option("--verify-max-ops", opt.verify_max_ops,
                                    "With --verify --seconds: the run phase ends after N "
                                    "operations, so the history stays bounded (default: what a "
                                    "quarter of this machine's memory holds)")
                         ->check(CLI::Range(uint64_t{1}, ~uint64_t{0}))
                         ->needs(verify)
                         ->group(g);
  app.add_option("--verify-seconds", opt.check_budget.seconds,
                 "With --verify: seconds the check may take; then the verdict is unknown, with the "
                 "reason (0 = no limit)")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str()
      ->needs(verify)
      ->group(g);
  app.add_option("--verify-memory-mb", opt.check_budget.memory_mb,
                 "With --verify: MiB the check's search may hold; then the verdict is unknown, "
                 "with the reason (0 = no limit)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 30))
      ->capture_default_str()
      ->needs(verify)
      ->group(g);
  c.stall = app.add_option("--stall-seconds", opt.stall_seconds,
                           "Wall-clock seconds one operation may run, or the others may keep "
                           "running after a worker failed, before dmrt-bench gives up: exit 1 "
                           "with what each worker was doing (0 = never; sim: 1800 unless given)")
                ->check(CLI::Range(0.0, 1e7))
                ->capture_default_str()
                ->group(g);
  app.add_option("--progress", opt.progress,
                 "Progress of each phase on stderr: tty (one line rewritten every 250 ms), lines "
                 "(a plain line every 10 s, for logs), off, or auto (tty on an interactive "
                 "terminal, else off)")
      ->check(CLI::IsMember({"auto", "tty", "lines", "off"}))
      ->capture_default_str()
      ->group(g);
  app.add_option("--compare-rounds", c.compare_rounds, "--compare: rounds (best of N per index)")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str()
      ->needs(c.compare_opt)
      ->group(g);
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
  add_common(app, c);
  add_workload(app, c);
  add_cluster(app, c);
  add_checks(app, c);
  add_indexes(app, c);
  // Every numeric flag, on the command line and in --config: no wrapped negatives, no NaN.
  tools::strict_numbers(app);
}

}  // namespace dmrt::bench
