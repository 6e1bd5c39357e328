// Phase results of dmrt-bench and their two renderings: a table on stdout and one JSON object.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/cli/options.h"
#include "bench/workload/workload.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/stats.h"

namespace dmrt::bench {

// Everything attributed to one operation kind (or to all kinds together).
struct KindResult {
  uint64_t count = 0;
  uint64_t failed = 0;
  Histogram latency;                      // ns, transport clock
  VerbCounters total;                     // verbs/bytes/round trips of these ops
  std::array<VerbCounters, 2> by_role{};  // split by node role (memory / compute)

  void merge(const KindResult& o) {
    count += o.count;
    failed += o.failed;
    latency.merge(o.latency);
    total += o.total;
    by_role[0] += o.by_role[0];
    by_role[1] += o.by_role[1];
  }
};

struct PhaseResult {
  std::string phase;  // "load" | "run" | "grow" (--then keys=N)
  double seconds = 0;
  std::array<KindResult, kOpKinds> kinds{};
  KindResult all;  // merge of kinds
  uint64_t cache_bytes = 0;
  uint64_t pool_bytes_used = 0;
  IndexStats index_stats;
  // Transport-specific figures (sim: NIC utilisation and the bottleneck); null when none.
  nlohmann::json transport_report;
  std::string transport_summary;      // the same for the table
  uint64_t start_ns = 0, end_ns = 0;  // the phase's window on the transport clock
  // One process of a multi-process run (--attach): who it was and its window (dmrt-bench --merge
  // adds up the latency histograms every JSON carries). Null otherwise.
  nlohmann::json process;
  // The signal that cut the phase short ("SIGINT"), or "" for a phase that ran to its end.
  std::string interrupted;
};

// What a result says beyond the run's options (whose report() fields it carries by key).
struct RunInfo {
  unsigned memory_nodes = 1, compute_nodes = 1;
  bool local_index = false;
  nlohmann::json index_options = nlohmann::json::object();  // the options the index ran with
  nlohmann::json placement;  // --cpus / --numa-node / --attach: where the process ran (or null)
};

// Every JSON line carries `provenance` (bench/report/provenance.h) once main has set it.
void set_provenance(nlohmann::json provenance);
// The run parameters every result carries: Options' report() fields by key (key_format only
// with byte-string keys).
nlohmann::json run_parameters_json(const Options& opt);
nlohmann::json phase_json(const Options& opt, const RunInfo& info, const PhaseResult& r);
// What this process has used up to now: peak resident memory (MiB), CPU time (user + system, s)
// and wall time since it started (s). A phase line carries it as "resources": the run line's is
// the whole process's, load included.
nlohmann::json resources_json();
// "latency_us" of a histogram (p50, p99, p999, mean, max), and the histogram itself in the
// sparse form dmrt-bench --merge reads back.
nlohmann::json latency_json(const Histogram& h);
nlohmann::json histogram_json(const Histogram& h);
Histogram histogram_from_json(const nlohmann::json& j);
void print_phase(const Options& opt, const RunInfo& info, const PhaseResult& r);
// Appends one line (JSON Lines) to `path`, or prints it when path is "-". Throws on I/O errors.
void write_json_line(const std::string& path, const nlohmann::json& j);

}  // namespace dmrt::bench
