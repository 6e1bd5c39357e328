// dmrt-bench's options, each declared once with its flag, help and range (docs/bench.md).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>

#include "bench/transports/shm_options.h"
#include "bench/workload/key_codec.h"
#include "bench/workload/workload.h"
#include "dmrt/check/report.h"
#include "dmrt/policies/shm/source.h"
#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/option_fields.h"

#if DMRT_TRANSPORT_SIM
#include "dmrt/policies/sim/options.h"
#endif
#if DMRT_TRANSPORT_VERBS
#include "dmrt/policies/verbs/device.h"
#endif

namespace dmrt::bench {

// The --help sections of Options' fields: the common ones (shown by --help), then the others
// (--help-all); each transport's is its TransportEntry::title (--help-transport NAME).
inline constexpr std::string_view kCommonSection = "Options";
inline constexpr std::string_view kWorkloadSection = "Workload";
inline constexpr std::string_view kClusterSection = "Cluster and processes";
inline constexpr std::string_view kChecksSection = "Checks, limits and output";

// Longest --seconds: its nanoseconds must fit the 64-bit transport clock with room to spare.
inline constexpr double kMaxSeconds = 1e7;

// Every dmrt-bench option. Each field is declared once, in fields(): its key (JSON, TOML), its
// flag (the key with dashes), its help, its range or choices and --help section. The command line
// (bench/cli/flags.cpp), the checks, the results' run parameters (report()) and the provenance
// derive from that list. Members without a field are derived (main.cpp and bench/cli/resolve.cpp
// set them) or belong to a transport's own flags (shm_pool, sim, verbs).
struct Options {
  std::string index;
  std::string transport = "shm";
  std::string workload = "c";
  uint64_t keys = 1'000'000;
  uint64_t ops = 1'000'000;  // run phase length when seconds == 0
  uint64_t warmup_ops = 0;   // operations of each run phase's mix run first, not measured
  double seconds = 0;        // run phase length in seconds (transport clock) when > 0
  unsigned threads = 1;
  unsigned fibers = 1;
  std::string distribution = "zipfian";  // effective distribution (D defaults to latest)
  double zipf_theta = 0.99;
  size_t value_size = 8;
  size_t key_size = 8;  // 8 = integer keys; more = byte strings (bench/workload/key_codec.h)
  double cache_mb = 0;
  uint64_t seed = 1;
  std::string json;  // "" = none, "-" = stdout, else a file (JSON Lines, appended)
  bool quiet = false;
  bool verify = false;
  std::string history;

  std::string key_format = "user";
  std::string key_order = "hashed";
  std::string keyset = "ycsb";  // which keys records stand for (KeyMap, bench/workload/workload.h)
  std::string trace_load;       // a YCSB trace file for the load phase (bench/workload/trace.h)
  std::string trace_run;        // and one for the run phase
  std::string write_trace;      // write the generated load and run phases as trace files here
  std::string then;             // more run phases on the loaded index (bench/driver/phases.h)

  std::string cluster;  // TOML cluster file; "" = embedded
  unsigned memory_nodes = 1;
  unsigned compute_nodes = 1;  // embedded cluster; on sim, sim.compute_nodes
  uint64_t memory_mb = 4096;
  uint64_t compute_mb = 64;
  std::string nodes;  // verbs: the cluster inline ("" = --cluster)
  bool stop_nodes = false;
  int node = -1;  // verbs, shm --attach: this process's node id (-1: the cluster's compute node)
  std::string attach;  // shm: run as compute node `node` of this pool (a name, or a path)
  std::string cpus;
  int numa_node = -1;
  double attach_wait_seconds = 60;
  double peer_timeout_seconds = 10;
  std::string on_peer_loss = "exit";  // or continue (bench/driver/group.h, survive_compute_loss)
  std::string merged_json;

  uint64_t verify_max_ops = ~uint64_t{0};         // --verify --seconds: the run phase ends here
  double verify_seconds = CheckBudget{}.seconds;  // the check's deadline
  uint64_t verify_memory_mb = CheckBudget{}.memory_mb;  // and its memory
  double stall_seconds = 60;
  std::string progress = "auto";  // tty, lines or off once resolve.cpp resolved auto (runner.h)

  ShmOptions shm;  // --shm-*: far memory and round trips of the shm transport

  // Derived, or a transport's own flags.
  uint64_t memory_bytes = 0;  // region per memory node of the embedded cluster: --memory-mb, or
                              // --sim-memory-bytes on sim
  std::string node_from;      // verbs: the launcher variable --node came from ("" = the flag)
  bool distribution_given = false;  // --distribution was given: --then's workloads keep it
  std::string json_template, history_template;  // --json, --history as given, before {node}
  shm::PoolSource shm_pool;  // shm: the pool this process creates lies on this device or file
#if DMRT_TRANSPORT_SIM
  sim::Options sim = sim::Options::preset("rdma-cx6");  // --transport sim: cluster and cost model
#endif
#if DMRT_TRANSPORT_VERBS
  verbs::Options verbs;  // --transport verbs: device and queue-pair settings
#endif

  static constexpr auto fields();

  CheckBudget check_budget() const {
    return {verify_seconds, verify_memory_mb};
  }
  Distribution dist() const {
    if (distribution == "uniform") return Distribution::kUniform;
    if (distribution == "latest") return Distribution::kLatest;
    return Distribution::kZipfian;
  }
  bool byte_keys() const {
    return key_size > kIntegerKeyBytes;
  }
  KeyCodec key_codec() const {
    return KeyCodec(key_size, parse_key_format(key_format).value_or(KeyFormat::kUser));
  }
  KeyOrder order() const {
    return key_order == "ordered" ? KeyOrder::kOrdered : KeyOrder::kHashed;
  }
};

namespace option_names {
inline constexpr std::string_view kWorkloads[] = {"load", "a", "b",      "c",      "d",
                                                  "e",    "f", "update", "insert", "scan"};
inline constexpr std::string_view kDistributions[] = {"zipfian", "uniform", "latest"};
inline constexpr std::string_view kKeyFormats[] = {"user", "random"};
inline constexpr std::string_view kKeyOrders[] = {"hashed", "ordered"};
inline constexpr std::string_view kKeysets[] = {"ycsb", "uniform", "normal", "lognormal",
                                                "seqgaps"};
inline constexpr std::string_view kProgress[] = {"auto", "tty", "lines", "off"};
inline constexpr std::string_view kPeerLoss[] = {"exit", "continue"};
}  // namespace option_names

static_assert(kMaxKeyBytes == 1024, "--key-size's help names the largest key");

// Options::fields(), one list per --help section.
namespace option_lists {
inline constexpr uint64_t kAll = ~uint64_t{0};

// The common flags (--help).
constexpr auto common() {
  namespace n = option_names;
  using O = Options;
  return option_fields(
      option_text("index", &O::index,
                  "Index to measure (--list-indexes; --help-index NAME: what it is, its flags)")
          .report(),
      option_text("transport", &O::transport,
                  "shm (shared memory), sim (a simulated cluster), verbs (RDMA), as compiled in; "
                  "--help-transport NAME: its flags")
          .report(),
      option_text("workload", &O::workload,
                  "YCSB a, b, c, d, e, f, or load (the load phase alone); after the load: "
                  "update, insert, scan",
                  n::kWorkloads)
          .report(),
      option_number("keys", &O::keys, "Records inserted by the load phase", 1, uint64_t{1} << 40)
          .report(),
      option_number("ops", &O::ops, "Run-phase operations, all clients together", 1, kAll),
      option_number("warmup_ops", &O::warmup_ops,
                    "Operations of each run phase's workload run first and not measured (their "
                    "own JSON line, phase warmup): a cache joined cold fills before the phase "
                    "counts",
                    uint64_t{0}, kAll),
      option_number("seconds", &O::seconds,
                    "Run phase length in seconds of the transport clock, instead of --ops (at "
                    "most 1e7)",
                    1e-6, kMaxSeconds)
          .no_default(),
      option_number("threads", &O::threads, "OS threads", 1, 1024).report(),
      option_number("fibers", &O::fibers, "Client fibers per thread", 1, 4096).report(),
      option_text("distribution", &O::distribution,
                  "Key popularity: zipfian (scrambled), uniform, latest (default zipfian; "
                  "workload d: latest)",
                  n::kDistributions)
          .no_default()
          .report(),
      option_number("zipf_theta", &O::zipf_theta, "Zipfian skew theta, in (0, 1)", 0.01, 0.9999)
          .report(),
      option_number("value_size", &O::value_size, "Value bytes", 1, size_t{1} << 20).report(),
      option_number("key_size", &O::key_size,
                    "Key bytes: 8 = integer keys; 9 to 1024 = byte strings (indexes whose "
                    "--help-index says [bytes])",
                    kIntegerKeyBytes, kMaxKeyBytes)
          .report(),
      option_number("cache_mb", &O::cache_mb,
                    "Compute-side cache MiB per compute node (chime, sherman, dmtree internal "
                    "nodes; 0 = the index default)",
                    0.0, std::numeric_limits<double>::max())
          .report(),
      option_number("seed", &O::seed, "Random seed (op mix and keys)", 0, kAll).report(),
      option_text("json", &O::json,
                  "Append one JSON line per phase to FILE (- = stdout; {node} = this process's "
                  "node id)"),
      option_switch("quiet", &O::quiet, "No table on stdout"),
      option_switch("verify", &O::verify, "Record a history and check it for linearizability"),
      option_text("history", &O::history,
                  "With --verify: also save the history to FILE, for dmrt-check"));
}

// Workload (--help-all).
constexpr auto workload() {
  namespace n = option_names;
  using O = Options;
  return fields_in_section(
      kWorkloadSection,
      option_fields(
          option_text("key_format", &O::key_format,
                      "With --key-size > 8: user (\"user\" + the key's 20 zero-padded digits, then "
                      "letters; needs --key-size >= 24) or random (the key's 8 bytes big-endian, "
                      "then pseudo-random bytes of any value); both keep the integer keys' order",
                      n::kKeyFormats)
              .report(),
          option_text("key_order", &O::key_order,
                      "Record -> key map: hashed (bijective 64-bit mix; key sets: shuffled) or "
                      "ordered (record + 1; key sets: ascending)",
                      n::kKeyOrders)
              .report(),
          option_text(
              "keyset", &O::keyset,
              "Keys the records stand for: ycsb (the --key-order map over 64-bit keys), or "
              "a learned-index key set: uniform, normal, lognormal, seqgaps (sequential with "
              "gaps)",
              n::kKeysets)
              .report(),
          option_text(
              "trace_load", &O::trace_load,
              "Load phase from FILE, a YCSB trace in the artifacts' format (INSERT k lines), "
              "cut into one part per client"),
          option_text("trace_run", &O::trace_run,
                      "Run phase from FILE (READ k, UPDATE k, INSERT k, SCAN k n, DELETE k), cut "
                      "into one part per client of the experiment"),
          option_text("write_trace", &O::write_trace,
                      "Write the load and run phases the workload flags describe to DIR as trace "
                      "files (load_randint_workloadX, txn_randint_workloadX), then exit"),
          option_text("then", &O::then,
                      "More run phases on the index as the previous one left it, no new load: "
                      "';' between phases, each KEY=VALUE[,KEY=VALUE] of workload, distribution, "
                      "zipf-theta, ops, seconds, cache-mb (a new cache size starts a cold cache), "
                      "keys (grows the index to that many records first), warmup-ops, e.g. "
                      "'workload=b;workload=a', 'cache-mb=50;cache-mb=100' or 'keys=40000000'")));
}

// Cluster and processes.
constexpr auto cluster() {
  namespace n = option_names;
  using O = Options;
  return fields_in_section(
      kClusterSection,
      option_fields(
          option_text("cluster", &O::cluster, "TOML cluster file (default: embedded)"),
          option_number("memory_nodes", &O::memory_nodes, "Memory nodes of the embedded cluster", 1,
                        1024),
          option_number("compute_nodes", &O::compute_nodes,
                        "Compute nodes; clients are homed round-robin over them (shm: of the "
                        "embedded cluster; sim: simulated, each with --clients-per-node clients)",
                        1, 65534),
          option_number("memory_mb", &O::memory_mb,
                        "Region MiB per memory node of the embedded cluster", 64,
                        uint64_t{1} << 24),
          option_number("compute_mb", &O::compute_mb,
                        "Region MiB per compute node of the embedded cluster (DMTree keeps a "
                        "fingerprint table per leaf there: about 70 bytes each)",
                        1, uint64_t{1} << 24),
          option_text("nodes", &O::nodes,
                      "verbs: the cluster inline, role:size@host:port,... (instead of --cluster)"),
          option_switch("stop_nodes", &O::stop_nodes,
                        "verbs, shm --attach: stop the memory nodes (dmrt-node) once every compute "
                        "process is done (the first compute node asks them)"),
          option_number(
              "node", &O::node,
              "verbs, shm --attach: this process's node id in the cluster (verbs default: "
              "with --cluster or --nodes, the rank a launcher gives, OMPI_COMM_WORLD_RANK, "
              "PMIX_RANK, PMI_RANK, MV2_COMM_WORLD_RANK or SLURM_PROCID; else the "
              "cluster's compute node)",
              0, 65535)
              .no_default(),
          option_text(
              "attach", &O::attach,
              "shm: run as compute node --node of the pool that a memory node process "
              "created (dmrt-node --transport shm --create --pool NAME or PATH); one process "
              "per compute node of the pool, the first creates and loads the index, all "
              "start the run phase together"),
          option_text("cpus", &O::cpus,
                      "Bind this process to these CPUs (a list such as 0-3,6), its threads one CPU "
                      "each in turn; reported in the JSON (placement)"),
          option_number("numa_node", &O::numa_node,
                        "Run this process on the CPUs of this NUMA node and allocate its memory "
                        "there (numa_run_on_node); reported in the JSON (placement)",
                        0, 1023)
              .no_default(),
          option_number(
              "attach_wait_seconds", &O::attach_wait_seconds,
              "Several compute processes (shm --attach, verbs with a cluster): seconds to "
              "wait for the index and for the other compute processes at each barrier",
              0.1, 1e6),
          option_number(
              "peer_timeout_seconds", &O::peer_timeout_seconds,
              "Several compute processes: a peer whose heartbeat stops this long is lost; "
              "the others end with an error naming it (or, --on-peer-loss continue, go on)",
              0.5, 1e6),
          option_text("on_peer_loss", &O::on_peer_loss,
                      "Several compute processes on shm: exit (a lost compute process ends the "
                      "run) or continue (it is killed if it still runs, declared dead, and the "
                      "others finish without it; --verify checks its journal; not the first "
                      "compute node, which concludes the run)",
                      n::kPeerLoss),
          option_text(
              "merged_json", &O::merged_json,
              "Several compute processes: the first compute node, once all are done, merges "
              "every node's --json part (a FILE with {node}) into this file")));
}

// Checks, limits and output.
constexpr auto checks() {
  namespace n = option_names;
  using O = Options;
  return fields_in_section(
      kChecksSection,
      option_fields(
          option_number("verify_max_ops", &O::verify_max_ops,
                        "With --verify --seconds: the run phase ends after N operations, so the "
                        "history stays bounded (default: what a quarter of this machine's memory "
                        "holds)",
                        1, kAll)
              .no_default(),
          option_number("verify_seconds", &O::verify_seconds,
                        "With --verify: seconds the check may take; then the verdict is unknown, "
                        "with the reason (0 = no limit)",
                        0.0, 1e9),
          option_number("verify_memory_mb", &O::verify_memory_mb,
                        "With --verify: MiB the check's search may hold; then the verdict is "
                        "unknown, with the reason (0 = no limit)",
                        0, uint64_t{1} << 30),
          option_number("stall_seconds", &O::stall_seconds,
                        "Wall-clock seconds one operation may run, or the others may keep running "
                        "after a worker failed, before dmrt-bench gives up: exit 1 with what each "
                        "worker was doing (0 = never; sim: 1800 unless given)",
                        0.0, 1e7),
          option_text("progress", &O::progress,
                      "Progress of each phase on stderr: tty (one line rewritten every 250 ms), "
                      "lines (a plain line every 10 s, for logs), off, or auto (tty on an "
                      "interactive terminal, else off)",
                      n::kProgress)));
}

}  // namespace option_lists

constexpr auto Options::fields() {
  namespace l = option_lists;
  return std::tuple_cat(l::common(), l::workload(), l::cluster(), l::checks());
}

}  // namespace dmrt::bench
