// dmrt-bench's command line once parsed (bench/cli/resolve.h).
#include "bench/cli/resolve.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <string>

#include "bench/cli/run_limits.h"
#include "bench/cli/trace_cli.h"
#include "bench/driver/group.h"
#include "bench/driver/phases.h"
#include "bench/driver/verify.h"
#include "bench/transports/registry.h"
#if DMRT_TRANSPORT_VERBS
#include "dmrt/policies/verbs/cluster.h"
#endif
#include "dmrt/runtime/launcher_rank.h"

namespace dmrt::bench {
namespace {

void lower(std::string& s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
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

// A cluster started by srun / mpirun: this process's rank is its node id, which must be one of
// the cluster's compute nodes (the memory nodes' ranks run dmrt-node). On shm, --attach's pool
// has the nodes; its first compute node's rank is checked when the pool is attached.
std::string node_from_launcher(Options& opt, const ClusterConfig& config) {
  const bool attach = opt.transport == "shm" && !opt.attach.empty();
  const bool verbs = opt.transport == "verbs" && (!opt.cluster.empty() || !opt.nodes.empty());
  if (opt.node >= 0 || !(attach || verbs)) return "";
  auto rank = launcher_rank();
  if (!rank) return "";
  if (verbs && (rank->rank >= config.size() || config.role(rank->rank) != NodeRole::kCompute))
    return "node " + std::to_string(rank->rank) + " from " + rank->variable +
           " is not a compute node of the cluster (" + std::to_string(config.size()) +
           " nodes): dmrt-bench is the compute node; give its memory nodes' ranks to dmrt-node, "
           "or --node";
  opt.node = static_cast<int>(rank->rank);
  opt.node_from = rank->variable;
  std::fprintf(stderr, "dmrt-bench: node %u from %s (no --node)\n", rank->rank,
               rank->variable.c_str());
  return "";
}

}  // namespace

std::string resolve_workload(const CLI::App& app, CommandLine& c, Mix& mix) {
  Options& opt = c.opt;
  lower(opt.workload);
  lower(opt.distribution);
  const auto m = mix_of(opt.workload);
  if (!m) return "unknown workload " + opt.workload;
  mix = *m;
  if (std::string err = check_trace_flags(app, opt, mix); !err.empty()) return err;
  if (c.key_format->count() > 0 && !opt.byte_keys())
    return "--key-format applies to byte-string keys: give --key-size > 8 too";
  if (opt.byte_keys() && opt.key_size < min_key_size(opt.key_codec().format()))
    return "--key-format " + opt.key_format +
           " needs --key-size >= " + std::to_string(min_key_size(opt.key_codec().format())) +
           " (\"user\" and 20 digits); use --key-format random for shorter keys";
  opt.distribution_given = c.dist->count() > 0;
  if (!opt.distribution_given) opt.distribution = mix.forces_latest ? "latest" : "zipfian";
  if (!opt.then.empty()) {
    if (!opt.trace_load.empty())
      return "--then has no meaning with trace files: the run file is the run phase";
    if (!opt.write_trace.empty())
      return "--write-trace writes one run phase: give it without --then";
    std::vector<RunPhase> phases;
    if (std::string err = plan_run_phases(opt, mix, opt.distribution_given, phases); !err.empty())
      return err;
  }
  if (opt.json == "-" && !opt.quiet) opt.quiet = true;  // keep stdout parseable
  opt.progress = resolve_progress(opt.progress);
  return "";
}

std::string resolve_sizes(const CLI::App& app, CommandLine& c) {
  Options& opt = c.opt;
  opt.memory_bytes = opt.memory_mb << 20;
  // What a transport's flags size of the embedded cluster (sim owns --compute-nodes and has
  // --sim-memory-bytes).
  for (const TransportEntry& t : registered_transports())
    if (t.resolve_sizes)
      if (std::string err = t.resolve_sizes(app, c); !err.empty()) return err;
  if (c.compute->count() > 0 && !opt.cluster.empty())
    return "--compute-nodes cannot be combined with --cluster (the file lists the nodes)";
  if (opt.compute_nodes < 1) return "--compute-nodes must be at least 1";
  // Output files are opened before the run, so a bad path costs nothing (paths with {node}: once
  // the node is known, resolve_outputs).
  if (opt.json.find("{node}") == std::string::npos &&
      opt.history.find("{node}") == std::string::npos)
    return check_writable(opt);
  return "";
}

std::string resolve_index_flags(const CommandLine& c, const IndexFlags& chosen) {
  for (const auto& [name, group] : c.flag_groups)
    for (const CLI::Option* o : group->get_options())
      if (o->count() > 0 && name != c.opt.index)
        return o->get_name() + " is a flag of --index " + name + ", not of --index " + c.opt.index;
  return chosen.check();
}

std::string resolve_cluster(CommandLine& c, ClusterConfig& config) {
  Options& opt = c.opt;
  if (!opt.cluster.empty()) config = ClusterConfig::from_toml_file(opt.cluster);
#if DMRT_TRANSPORT_VERBS
  else if (!opt.nodes.empty())
    config = verbs::parse_cluster_arg(opt.nodes);
#endif
  else
    config = ClusterConfig::embedded(opt.memory_nodes, opt.compute_nodes, opt.memory_bytes,
                                     opt.compute_mb << 20);
  if (opt.transport != "verbs" && !opt.nodes.empty())
    return "--nodes is a flag of --transport verbs";
  if (opt.stop_nodes && opt.transport != "verbs" && opt.attach.empty())
    return "--stop-nodes is a flag of --transport verbs, or of shm with --attach";
  if (opt.node >= 0 && opt.transport != "verbs" && opt.attach.empty())
    return "--node is a flag of --transport verbs, or of --transport shm with --attach";
  if (std::string err = node_from_launcher(opt, config); !err.empty()) return err;
  if (!opt.attach.empty()) {
    if (opt.transport != "shm") return "--attach is a flag of --transport shm";
    if (opt.node < 0)
      return "--attach needs --node K: the compute node of the pool this process runs";
    for (const CLI::Option* o : {c.cluster, c.memory_mb, c.compute_mb, c.compute, c.memory_nodes})
      if (o->count() > 0)
        return o->get_name() +
               " cannot be combined with --attach: the pool's nodes are those its creator made "
               "(dmrt-node --create)";
  }
  if (opt.on_peer_loss == "continue" && opt.transport != "shm")
    return "--on-peer-loss continue is for shm: a lost process must be fenced (killed) before the "
           "others take over what it held, and only one host's kernel can do that";
  if (!opt.then.empty() && (!opt.attach.empty() || opt.node >= 0))
    return "--then runs in one process: a run of several compute processes (--attach, --node) "
           "has one run phase";
  if (opt.warmup_ops > 0 && (!opt.attach.empty() || opt.node >= 0))
    return "--warmup-ops runs in one process: several compute processes (--attach, --node) "
           "would each warm up alone, between the barriers that start the run together";
  if (opt.warmup_ops > 0 && !opt.trace_run.empty())
    return "--warmup-ops has no meaning with a trace file: the run file is the run phase";
  for (const CLI::Option* o : c.shm_only)
    if (o->count() > 0 && opt.transport != "shm")
      return o->get_name() + " is a flag of --transport shm";
  return "";
}

std::string resolve_outputs(CommandLine& c, const ClusterConfig& config) {
  Options& opt = c.opt;
  // Several compute processes: each saves its part of the history, and the union is checked
  // (by the first compute node when the parts are files it can read: {node} in the path).
  const bool several =
      !opt.attach.empty() || (opt.transport == "verbs" && config.compute_nodes().size() > 1);
  if (several && opt.verify && opt.history.empty())
    return "--verify with several compute processes needs --history FILE (with {node}: each "
           "process saves its part, and the first compute node checks their union; else check "
           "it with dmrt-check FILE1 FILE2 ...)";
  if (!opt.merged_json.empty() && opt.json.find("{node}") == std::string::npos)
    return "--merged-json needs --json FILE with {node}: one part per compute node";
  if (std::string err = check_distinct_outputs(opt); !err.empty()) return err;
  opt.json_template = opt.json;
  opt.history_template = opt.history;
  if (opt.node >= 0) {
    opt.json = expand_node(opt.json, static_cast<NodeId>(opt.node));
    opt.history = expand_node(opt.history, static_cast<NodeId>(opt.node));
  }
  if (opt.history == opt.json && !opt.json.empty())
    return "--json and --history name the same file " + opt.json;
  // Output files are opened before the run, so a bad path costs nothing.
  return check_writable(opt);
}

std::string resolve_transport(CommandLine& c, const ClusterConfig& config) {
  const TransportEntry* t = find_transport(c.opt.transport);
  if (!t) return transport_unavailable(c.opt.transport);
  return t->resolve ? t->resolve(c, config) : "";
}

}  // namespace dmrt::bench
