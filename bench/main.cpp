// dmrt-bench: YCSB core workloads over dmrt indexes (and local peers), per-operation round trips,
// verbs and bytes, latency percentiles; a table on stdout and JSON Lines with --json.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/compare.h"
#include "bench/indexes.h"
#include "bench/interrupt.h"
#include "bench/merge.h"
#include "bench/options.h"
#include "bench/provenance.h"
#include "bench/report.h"
#include "bench/run_limits.h"
#include "bench/run_on.h"
#include "bench/spec_flags.h"
#include "bench/trace_cli.h"
#include "bench/verify.h"
#include "bench/workload.h"
#if DMRT_TRANSPORT_SIM
#include "policies/sim/cli.h"
#endif
#include "runtime/cluster.h"
#if DMRT_TRANSPORT_VERBS
#include "policies/verbs/cli.h"
#include "policies/verbs/cluster.h"
#endif
#include "bench/group.h"
#include "runtime/error.h"
#include "runtime/launcher_rank.h"
#include "runtime/placement.h"
#include "runtime/scheduler.h"
#include "tools/common/cli_config.h"
#include "tools/common/cli_numbers.h"

namespace dmrt::bench {

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "dmrt-bench: %s\n", msg.c_str());
  return kUsage;
}

namespace {

std::vector<std::string> index_names() {
  std::vector<std::string> out;
  for (const auto& i : index_infos(SpecList{})) out.push_back(i.name);
  return out;
}

// --progress auto: the rewritten line on an interactive terminal only. A serial or system console
// is a terminal too, but what it shows ends up in a log (the VM tests' console.log), where every
// rewrite would be a line of its own.
std::string resolve_progress(const std::string& mode) {
  if (mode != "auto") return mode;
  if (isatty(STDERR_FILENO) != 1) return "off";
  const char* tty = ttyname(STDERR_FILENO);
  const std::string name = tty ? tty : "";
  for (const char* console : {"/dev/console", "/dev/ttyS", "/dev/ttyAMA", "/dev/hvc"})
    if (name.rfind(console, 0) == 0) return "off";
  return "tty";
}

std::string index_help() {
  std::string s = "Index to measure:";
  for (const auto& i : index_infos(SpecList{}))
    s += "\n  " + i.name + (i.scan ? " [scan]" : "") + (i.byte_keys ? " [bytes]" : "") + ": " +
         i.summary;
  s += "\n[bytes]: takes byte-string keys (--key-size > 8); the others take 8-byte integer keys";
  return s;
}

int main_impl(int argc, char** argv) {
  const auto start = std::chrono::system_clock::now();
  Options opt;
  const auto names = index_names();
  opt.index = names.front();
  IndexFlags flags;  // every index's typed options; CLI11 writes into them

  CLI::App app{"dmrt-bench: YCSB workloads over dmrt indexes on disaggregated memory"};
  app.get_formatter()->column_width(34);
  app.add_option("--index", opt.index, index_help())
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  app.add_option("--transport", opt.transport,
                 "Transport policy: shm (shared memory); sim, verbs when compiled in")
      ->capture_default_str();
  app.add_option("--workload", opt.workload,
                 "YCSB workload: load (load phase only), a (50% read/50% update), b (95/5), "
                 "c (read only), d (95% read latest/5% insert), e (95% scan/5% insert), "
                 "f (50% read/50% read-modify-write); micro-benchmarks after the load: update, "
                 "insert (new keys), scan")
      ->check(CLI::IsMember({"load", "a", "b", "c", "d", "e", "f", "update", "insert", "scan"},
                            CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--keys", opt.keys, "Records inserted by the load phase")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  auto* ops = app.add_option("--ops", opt.ops, "Operations in the run phase (all clients together)")
                  ->check(CLI::Range(uint64_t{1}, ~uint64_t{0}))
                  ->capture_default_str();
  app.add_option("--seconds", opt.seconds,
                 "Run phase length in seconds of the transport clock (instead of --ops), at most "
                 "1e7 (its nanoseconds must fit the 64-bit clock)")
      ->check(CLI::Range(1e-6, kMaxSeconds))
      ->excludes(ops);
  app.add_option("--threads", opt.threads, "OS threads")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  app.add_option("--fibers", opt.fibers, "Client fibers per thread")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  auto* dist = app.add_option("--distribution", opt.distribution,
                              "Key popularity: zipfian (scrambled), uniform, latest "
                              "(default zipfian; workload d: latest)")
                   ->check(CLI::IsMember({"zipfian", "uniform", "latest"}, CLI::ignore_case));
  app.add_option("--zipf-theta", opt.zipf_theta, "Zipfian skew theta, in (0, 1)")
      ->check(CLI::Range(0.01, 0.9999))
      ->capture_default_str();
  app.add_option("--value-size", opt.value_size, "Value bytes")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--key-size", opt.key_size,
                 "Key bytes: 8 = 64-bit integer keys; 9 to " + std::to_string(kMaxKeyBytes) +
                     " = byte-string keys of exactly that many bytes, in the --key-format form "
                     "(only indexes marked [bytes] take them)")
      ->check(CLI::Range(kIntegerKeyBytes, kMaxKeyBytes))
      ->capture_default_str();
  auto* key_format =
      app.add_option("--key-format", opt.key_format,
                     "With --key-size > 8: user (\"user\" + the key's 20 zero-padded digits, then "
                     "letters; needs --key-size >= 24) or random (the key's 8 bytes big-endian, "
                     "then pseudo-random bytes of any value); both keep the integer keys' order")
          ->check(CLI::IsMember({"user", "random"}))
          ->capture_default_str();
  app.add_option("--cache-mb", opt.cache_mb,
                 "Compute-side cache budget in MiB per compute node, shared by its clients: the "
                 "internal-node cache of chime, sherman and dmtree (0 = the index default)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", opt.seed, "Random seed (op mix and keys)")->capture_default_str();
  app.add_option("--key-order", opt.key_order,
                 "Record -> key map: hashed (bijective 64-bit mix; key sets: shuffled) or ordered "
                 "(record + 1; key sets: ascending)")
      ->check(CLI::IsMember({"hashed", "ordered"}))
      ->capture_default_str();
  app.add_option(
         "--keyset", opt.keyset,
         "Keys the records stand for: ycsb (the --key-order map over 64-bit keys), or a "
         "learned-index key set: uniform, normal, lognormal, seqgaps (sequential with gaps)")
      ->check(CLI::IsMember({"ycsb", "uniform", "normal", "lognormal", "seqgaps"}))
      ->capture_default_str();
  app.add_option("--json", opt.json,
                 "Append one JSON object per phase (JSON Lines) to FILE; - = stdout; {node} in "
                 "FILE is replaced by this process's node id (one command line for every "
                 "compute process of a cluster)");
  auto* cluster = app.add_option("--cluster", opt.cluster, "TOML cluster file (default: embedded)")
                      ->check(CLI::ExistingFile);
  app.add_option("--memory-nodes", opt.memory_nodes, "Memory nodes of the embedded cluster")
      ->check(CLI::Range(1u, 1024u))
      ->excludes(cluster)
      ->capture_default_str();
  auto* memory_mb = app.add_option("--memory-mb", opt.memory_mb,
                                   "Region MiB per memory node of the embedded cluster")
                        ->check(CLI::Range(uint64_t{64}, uint64_t{1} << 24))
                        ->excludes(cluster)
                        ->capture_default_str();
  const std::string compute_help =
      "Compute nodes; clients are homed round-robin over them (shm: of the embedded cluster; "
      "sim: simulated, each with --clients-per-node clients)";
#if DMRT_TRANSPORT_SIM
  sim::add_cli_flags(app, opt.sim, "Simulator (--transport sim)", false);
  // The simulator owns --compute-nodes; it also sizes shm's embedded cluster, so it is listed
  // with the general flags.
  CLI::Option* compute = app.get_option("--compute-nodes");
  compute->description(compute_help)->group("Options");
#else
  CLI::Option* compute = app.add_option("--compute-nodes", opt.compute_nodes, compute_help)
                             ->check(CLI::Range(1u, 1024u))
                             ->capture_default_str();
#endif
#if DMRT_TRANSPORT_VERBS
  const std::string vg = "RDMA (--transport verbs)";
  app.add_option("--nodes", opt.nodes,
                 "verbs: the cluster inline, role:size@host:port,... (instead of --cluster)")
      ->excludes(cluster)
      ->group(vg);
  verbs::add_cli_flags(app, opt.verbs, vg);
#endif
  app.add_flag("--stop-nodes", opt.stop_nodes,
               "verbs, shm --attach: stop the memory nodes (dmrt-node) once every compute process "
               "is done (the first compute node asks them)");
  app.add_option("--node", opt.node,
                 "verbs, shm --attach: this process's node id in the cluster (verbs default: "
                 "with --cluster or --nodes, the rank a launcher gives, OMPI_COMM_WORLD_RANK, "
                 "PMIX_RANK, PMI_RANK, MV2_COMM_WORLD_RANK or SLURM_PROCID; else the cluster's "
                 "compute node)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--cpus", opt.cpus,
                 "Bind this process to these CPUs (a list such as 0-3,6), its threads one CPU each "
                 "in turn; reported in the JSON (placement)");
  app.add_option("--numa-node", opt.numa_node,
                 "Run this process on the CPUs of this NUMA node and allocate its memory there "
                 "(numa_run_on_node); reported in the JSON (placement)")
      ->check(CLI::Range(0, 1023));
  std::vector<std::string> merge;
  bool merge_partial = false;
  app.add_option("--merge", merge,
                 "Merge the JSON files of the processes of one multi-process run into "
                 "one report per phase (to --json FILE, or a table), then exit")
      ->check(CLI::ExistingFile);
  app.add_flag("--merge-partial", merge_partial,
               "--merge: merge the parts given even when some of the run's compute processes "
               "are missing");
  app.add_flag("--shm-interleave", opt.shm_interleave,
               "shm: every client fiber yields after each round trip, as while a NIC serves it, so "
               "the fibers of a thread interleave inside operations (for --verify)");
  const std::string shm_group = "shm (--transport shm)";
  app.add_option("--attach", opt.attach,
                 "shm: run as compute node --node of the named pool that a memory node process "
                 "created (dmrt-node --transport shm --create --pool NAME); one process per "
                 "compute node of the pool, the first creates and loads the index, all start "
                 "the run phase together")
      ->group(shm_group);
  app.add_option("--attach-wait-seconds", opt.attach_wait_seconds,
                 "Several compute processes (shm --attach, verbs with a cluster): seconds to wait "
                 "for the index and for the other compute processes at each barrier")
      ->check(CLI::Range(0.1, 1e6))
      ->capture_default_str();
  app.add_option("--peer-timeout-seconds", opt.peer_timeout_seconds,
                 "Several compute processes: a peer whose heartbeat stops this long is lost; the "
                 "others end with an error naming it")
      ->check(CLI::Range(0.5, 1e6))
      ->capture_default_str();
  app.add_option("--merged-json", opt.merged_json,
                 "Several compute processes: the first compute node, once all are done, merges "
                 "every node's --json part (a FILE with {node}) into this file");
  auto* shm_mode =
      app.add_option("--shm-mode", opt.shm_mode,
                     "shm: how a round trip executes: inline (perform the verbs at once, stalling "
                     "on each cache miss), prefetch (prefetch the lines it touches, yield to the "
                     "next fiber, then perform them: misses of several fibers overlap), or auto "
                     "(prefetch with a far-memory model, inline without; as measured in "
                     "docs/bench.md)")
          ->check(CLI::IsMember({"auto", "inline", "prefetch"}))
          ->capture_default_str()
          ->group(shm_group);
  auto* shm_coherence =
      app.add_option("--shm-coherence", opt.shm_coherence,
                     "shm: none, or flush: around every verb to another node, the cache-line "
                     "flushes and fences a port to non-coherent shared CXL memory must issue "
                     "(invalidate before reads, write back and fence after writes; "
                     "docs/cxl-porting.md)")
          ->check(CLI::IsMember({"none", "flush"}))
          ->capture_default_str()
          ->group(shm_group);
  auto* shm_preset =
      app.add_option("--shm-preset", opt.shm_preset,
                     "shm: far-memory figures for every memory node: cxl (300 ns, 256 Gbit/s, "
                     "the figures of sim's cxl preset) or none; --shm-latency-ns and --shm-gbps "
                     "override it")
          ->check(CLI::IsMember(FarMemoryCost::preset_names()))
          ->group(shm_group);
  auto* shm_latency =
      app.add_option("--shm-latency-ns", opt.shm_latency_ns,
                     "shm: a round trip to a memory node completes no earlier than this many ns "
                     "after it was posted (plus its link time with --shm-gbps); the fiber yields "
                     "meanwhile. Over the cluster file's shm_latency_ns")
          ->check(CLI::Range(int64_t{0}, static_cast<int64_t>(FarMemoryCost::kMaxLatencyNs)))
          ->group(shm_group);
  auto* shm_gbps =
      app.add_option("--shm-gbps", opt.shm_gbps,
                     "shm: link bandwidth of each memory node in Gbit/s, shared by all clients "
                     "(round trips queue for it; 0 = unlimited). Over the cluster file's shm_gbps")
          ->check(CLI::Range(0.0, FarMemoryCost::kMaxGbps))
          ->group(shm_group);
  auto* verify =
      app.add_flag("--verify", opt.verify, "Record a history and check it for linearizability");
  app.add_option("--history", opt.history,
                 "With --verify: also write the recorded history to FILE (text, one operation per "
                 "line), to check again with dmrt-check")
      ->needs(verify);
  add_trace_flags(app, opt);
  auto* vmax = app.add_option("--verify-max-ops", opt.verify_max_ops,
                              "With --verify --seconds: the run phase ends after N operations, so "
                              "the history stays bounded (default: what a quarter of this "
                              "machine's memory holds)")
                   ->check(CLI::Range(uint64_t{1}, ~uint64_t{0}))
                   ->needs(verify);
  app.add_option("--verify-seconds", opt.check_budget.seconds,
                 "With --verify: seconds the check may take; then the verdict is unknown, with the "
                 "reason (0 = no limit)")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str()
      ->needs(verify);
  app.add_option(
         "--verify-memory-mb", opt.check_budget.memory_mb,
         "With --verify: MiB the check's search may hold; then the verdict is unknown, with "
         "the reason (0 = no limit)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 30))
      ->capture_default_str()
      ->needs(verify);
  auto* stall =
      app.add_option("--stall-seconds", opt.stall_seconds,
                     "Wall-clock seconds one operation may run, or the others may keep "
                     "running after a worker failed, before dmrt-bench gives up: exit 1 "
                     "with what each worker was doing (0 = never; sim: 1800 unless given)")
          ->check(CLI::Range(0.0, 1e7))
          ->capture_default_str();
  app.add_flag("--quiet", opt.quiet, "No table on stdout (with --json FILE: JSON only)");
  app.add_option("--progress", opt.progress,
                 "Progress of each phase on stderr: tty (one line rewritten every 250 ms), lines "
                 "(a plain line every 10 s, for logs), off, or auto (tty on an interactive "
                 "terminal, else off)")
      ->check(CLI::IsMember({"auto", "tty", "lines", "off"}))
      ->capture_default_str();
  std::string compare;
  unsigned compare_rounds = 3;
  auto* compare_opt =
      app.add_option("--compare", compare,
                     "Run these indexes (comma-separated, or all) side by side with the same "
                     "flags, interleaved round robin, and report each one's best round and its "
                     "ratio to the best local peer of its kind (docs/bench.md)");
  app.add_option("--compare-rounds", compare_rounds, "--compare: rounds (best of N per index)")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str()
      ->needs(compare_opt);
  bool list = false;
  app.add_flag(
      "--list-indexes", list,
      "Print the indexes of this build, one per line after a '#' header: name, scan or -, local "
      "or -; then exit");
  // One option group per index; their flags are refused unless --index names that index.
  const auto flag_groups = add_index_flags(app, flags);
  std::string write_config_path;
  CLI::Option* config_file = tools::add_config_flags(app, write_config_path);
  // Every numeric flag, on the command line and in --config: no wrapped negatives, no NaN.
  tools::strict_numbers(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ConfigError& e) {
    return usage_error(tools::config_error_text(e));
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kUsage;
  }

  if (!merge.empty()) return merge_reports(merge, opt.json, merge_partial);
  if (list) {
    std::printf("# index\tscan\tlocal\n");
    for (const auto& i : index_infos(SpecList{}))
      std::printf("%s\t%s\t%s\n", i.name.c_str(), i.scan ? "scan" : "-", i.local ? "local" : "-");
    return 0;
  }
  if (!write_config_path.empty()) {
    tools::write_config(app, write_config_path);
    return 0;
  }

  for (char& ch : opt.workload)
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (char& ch : opt.distribution)
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  auto mix = mix_of(opt.workload);
  if (!mix) return usage_error("unknown workload " + opt.workload);
  if (std::string err = check_trace_flags(app, opt, *mix); !err.empty()) return usage_error(err);
  if (!opt.write_trace.empty()) return write_trace(opt, *mix);
  if (key_format->count() > 0 && !opt.byte_keys())
    return usage_error("--key-format applies to byte-string keys: give --key-size > 8 too");
  if (opt.byte_keys() && opt.key_size < min_key_size(opt.key_codec().format()))
    return usage_error("--key-format " + opt.key_format + " needs --key-size >= " +
                       std::to_string(min_key_size(opt.key_codec().format())) +
                       " (\"user\" and 20 digits); use --key-format random for shorter keys");
  // On sim one operation's wall-clock time grows with the whole simulated cluster (every other
  // client's events run while it waits), so only a real hang reaches this bound.
  if (opt.transport == "sim" && stall->count() == 0) opt.stall_seconds = 1800;
  if (dist->count() == 0) opt.distribution = mix->forces_latest ? "latest" : "zipfian";
  if (opt.json == "-" && !opt.quiet) opt.quiet = true;  // keep stdout parseable
  opt.progress = resolve_progress(opt.progress);

#if DMRT_TRANSPORT_SIM
  opt.compute_nodes = opt.sim.compute_nodes;
#endif
  if (compute->count() > 0 && !opt.cluster.empty())
    return usage_error(
        "--compute-nodes cannot be combined with --cluster (the file lists the nodes)");
  if (opt.compute_nodes < 1) return usage_error("--compute-nodes must be at least 1");

  opt.memory_bytes = opt.memory_mb << 20;
#if DMRT_TRANSPORT_SIM
  if (const CLI::Option* smb = app.get_option("--sim-memory-bytes"); smb->count() > 0) {
    if (opt.transport != "sim")
      return usage_error("--sim-memory-bytes is a flag of --transport sim");
    if (memory_mb->count() > 0)
      return usage_error("give one of --memory-mb and --sim-memory-bytes (both size the regions)");
    if (!opt.cluster.empty())
      return usage_error(
          "--sim-memory-bytes cannot be combined with --cluster (the file sizes "
          "the regions)");
    opt.memory_bytes = opt.sim.memory_bytes;
  }
#else
  (void)memory_mb;
#endif
  // Output files are opened before the run, so a bad path costs nothing (paths with {node}: once
  // the node is known, below).
  if (opt.json.find("{node}") == std::string::npos &&
      opt.history.find("{node}") == std::string::npos)
    if (std::string err = check_writable(opt); !err.empty()) return usage_error(err);

  if (compare_opt->count() > 0) {
    for (const char* f : {"--index", "--config", "--attach", "--history"})
      if (app.get_option(f)->count() > 0)
        return usage_error(std::string(f) + " cannot be combined with --compare");
    return run_compare(app, flag_groups, argc, argv, opt, compare, compare_rounds);
  }
  // Index flags: only the chosen index's.
  for (const auto& [name, group] : flag_groups)
    for (const CLI::Option* o : group->get_options())
      if (o->count() > 0 && name != opt.index)
        return usage_error(o->get_name() + " is a flag of --index " + name + ", not of --index " +
                           opt.index);
  if (std::string err = check_index_flags(opt.index, flags); !err.empty()) return usage_error(err);

  if (opt.verify && !verify_available()) {
    std::fprintf(stderr, "verify: not available in this build\n");
    return kUsage;
  }

  ClusterConfig config =
      !opt.cluster.empty() ? ClusterConfig::from_toml_file(opt.cluster)
#if DMRT_TRANSPORT_VERBS
      : !opt.nodes.empty()
          ? verbs::parse_cluster_arg(opt.nodes)
#endif
          : ClusterConfig::embedded(opt.memory_nodes, opt.compute_nodes, opt.memory_bytes);
  if (opt.transport != "verbs" && !opt.nodes.empty())
    return usage_error("--nodes is a flag of --transport verbs");
  if (opt.stop_nodes && opt.transport != "verbs" && opt.attach.empty())
    return usage_error("--stop-nodes is a flag of --transport verbs, or of shm with --attach");
  if (opt.node >= 0 && opt.transport != "verbs" && opt.attach.empty())
    return usage_error(
        "--node is a flag of --transport verbs, or of --transport shm with --attach");
  // A cluster started by srun / mpirun: this process's rank is its node id, which must be one of
  // the cluster's compute nodes (the memory nodes' ranks run dmrt-node). On shm, --attach's pool
  // has the nodes; its first compute node's rank is checked when the pool is attached.
  if (opt.transport == "shm" && opt.node < 0 && !opt.attach.empty()) {
    if (auto rank = launcher_rank()) {
      opt.node = static_cast<int>(rank->rank);
      opt.node_from = rank->variable;
      std::fprintf(stderr, "dmrt-bench: node %u from %s (no --node)\n", rank->rank,
                   rank->variable.c_str());
    }
  }
  if (opt.transport == "verbs" && opt.node < 0 && (!opt.cluster.empty() || !opt.nodes.empty())) {
    if (auto rank = launcher_rank()) {
      if (rank->rank >= config.size() || config.role(rank->rank) != NodeRole::kCompute)
        return usage_error("node " + std::to_string(rank->rank) + " from " + rank->variable +
                           " is not a compute node of the cluster (" +
                           std::to_string(config.size()) +
                           " nodes): dmrt-bench is the compute node; give its memory nodes' "
                           "ranks to dmrt-node, or --node");
      opt.node = static_cast<int>(rank->rank);
      opt.node_from = rank->variable;
      std::fprintf(stderr, "dmrt-bench: node %u from %s (no --node)\n", rank->rank,
                   rank->variable.c_str());
    }
  }
  if (!opt.attach.empty()) {
    if (opt.transport != "shm") return usage_error("--attach is a flag of --transport shm");
    if (opt.node < 0)
      return usage_error("--attach needs --node K: the compute node of the pool this process runs");
    for (const CLI::Option* o :
         {cluster, static_cast<CLI::Option*>(memory_mb), compute, app.get_option("--memory-nodes")})
      if (o->count() > 0)
        return usage_error(o->get_name() +
                           " cannot be combined with --attach: the pool's nodes are those its "
                           "creator made (dmrt-node --create)");
  }
  // Several compute processes: each saves its part of the history, and the union is checked
  // (by the first compute node when the parts are files it can read: {node} in the path).
  const bool several =
      !opt.attach.empty() || (opt.transport == "verbs" && config.compute_nodes().size() > 1);
  if (several && opt.verify && opt.history.empty())
    return usage_error(
        "--verify with several compute processes needs --history FILE (with {node}: each "
        "process saves its part, and the first compute node checks their union; else check it "
        "with dmrt-check FILE1 FILE2 ...)");
  if (!opt.merged_json.empty() && opt.json.find("{node}") == std::string::npos)
    return usage_error("--merged-json needs --json FILE with {node}: one part per compute node");
  if (std::string err = check_distinct_outputs(opt); !err.empty()) return usage_error(err);
  opt.json_template = opt.json;
  opt.history_template = opt.history;
  if (opt.node >= 0) {
    opt.json = expand_node(opt.json, static_cast<NodeId>(opt.node));
    opt.history = expand_node(opt.history, static_cast<NodeId>(opt.node));
  }
  if (opt.history == opt.json && !opt.json.empty())
    return usage_error("--json and --history name the same file " + opt.json);
  // Output files are opened before the run, so a bad path costs nothing.
  if (std::string err = check_writable(opt); !err.empty()) return usage_error(err);
  // Where this process runs, before any thread or memory of the run exists.
  if (opt.numa_node >= 0) placement::bind_numa(opt.numa_node);
  if (!opt.cpus.empty()) placement::bind_thread(placement::parse_cpu_list(opt.cpus));
  for (const CLI::Option* o : {shm_mode, shm_coherence, shm_preset, shm_latency, shm_gbps})
    if (o->count() > 0 && opt.transport != "shm")
      return usage_error(o->get_name() + " is a flag of --transport shm");
  // The far-memory flags apply to every memory node, over what a cluster file says (an attached
  // pool's nodes: bench/transports.h).
  opt.apply_far_flags(config);

#if DMRT_TRANSPORT_SIM
  if (opt.transport == "sim" && !opt.cluster.empty())
    opt.sim.compute_nodes = static_cast<unsigned>(config.compute_nodes().size());
#endif
  check_limits(opt, *mix, vmax->count() > 0);
  set_provenance(provenance_json(std::vector<std::string>(argv, argv + argc), start, opt, config,
                                 config_file->count() > 0 ? config_file->as<std::string>() : ""));

  // The one transport switch; the chosen index's run() (bench/run_NAME.cpp) instantiates the
  // driver for that transport.
  TransportKind kind;
  if (opt.transport == "shm") {
    kind = TransportKind::shm;
#if DMRT_TRANSPORT_SIM
  } else if (opt.transport == "sim") {
    // Every simulated client is a fiber of one OS thread, in virtual time.
    if (!opt.cluster.empty())
      opt.sim.compute_nodes = static_cast<unsigned>(config.compute_nodes().size());
    opt.compute_nodes = opt.sim.compute_nodes;
    opt.threads = 1;
    opt.fibers = opt.sim.compute_nodes * opt.sim.clients_per_node;
    kind = TransportKind::sim;
#endif
#if DMRT_TRANSPORT_VERBS
  } else if (opt.transport == "verbs") {
    kind = TransportKind::verbs;
#endif
  } else if (opt.transport == "sim" || opt.transport == "verbs") {
    std::string built = "shm";
#if DMRT_TRANSPORT_SIM
    built += ", sim";
#endif
#if DMRT_TRANSPORT_VERBS
    built += ", verbs";
#endif
    return usage_error("transport " + opt.transport +
                       " is not available in this dmrt-bench build (compiled in: " + built + ")");
  } else {
    return usage_error("unknown transport " + opt.transport + " (choices: shm, sim, verbs)");
  }
  // From here a signal ends the run at the next operation, and what was measured is written.
  catch_interrupts();
  int rc = kUsage;
  const bool found = with_spec(opt.index, flags, [&]<class S>(const FlagsOfSpec<S>& f) {
    const RunRequest request{kind, S::kName, S::kLocal, S::kScan, opt, config, *mix};
    if constexpr (std::is_same_v<FlagsOfSpec<S>, NoFlags>)
      rc = S::run(request);
    else
      rc = S::run(request, SpecResolver<S>(f));
  });
  if (!found) return usage_error("unknown index " + opt.index);
  return rc;
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
