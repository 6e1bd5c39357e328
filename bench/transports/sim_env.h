// dmrt-bench's driver on the sim transport: the simulated cluster, and each phase's virtual-time
// report with how fast the simulator itself ran.
#pragma once

#include <chrono>
#include <cstdint>

#include <fmt/format.h>

#include "bench/transports/env.h"
#include "dmrt/policies/sim/cluster.h"
#include "dmrt/policies/sim/report_json.h"
#include "dmrt/policies/sim/transport.h"

namespace dmrt::bench {

// sim: one OS thread runs every client as a fiber in virtual time (Options::threads is 1 and
// fibers = compute nodes x clients per node; main.cpp sees to that). Latencies, phase lengths and
// --seconds are virtual; each phase also reports NIC utilisation and the bottleneck.
template <>
struct Env<SimTransport> {
  Env(const Options& opt, const ClusterConfig& config)
      : cluster(opt.cluster.empty() ? sim::Cluster(sim_options(opt))
                                    : sim::Cluster(sim_options(opt), config)) {}

  static sim::Options sim_options(const Options& opt) {
    sim::Options o = opt.sim;
    o.memory_nodes = opt.memory_nodes;
    o.memory_bytes = opt.memory_bytes;
    o.compute_bytes = opt.compute_mb << 20;
    return o;
  }
  sim::Endpoint endpoint(NodeId home, uint32_t client_id) {
    return cluster.endpoint(home, client_id);
  }
  ThreadHooks hooks() { return cluster.hooks(); }
  ClockOffset clock_offset(Client<SimTransport>&) const { return {}; }  // one process
  template <class C>
  void between_ops(C&) {}  // the virtual-time scheduler already interleaves clients
  const ClusterConfig& config() const { return cluster.config(); }
  void begin_phase() {
    cluster.reset_stats();
    wall_before = std::chrono::steady_clock::now();
    cpu_before = process_cpu_seconds();
  }
  // Besides the virtual-time report, how fast the simulator ran (the only wall-clock figures of a
  // sim phase): simulated verbs per wall-clock second and per CPU second of the process.
  void end_phase(PhaseResult& r) {
    const double cpu = process_cpu_seconds() - cpu_before;
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
    sim::Report rep = cluster.report();
    r.transport_report = rep;
    r.transport_report["options"] = cluster.options();
    r.transport_report["wall_s"] = wall;
    r.transport_report["cpu_s"] = cpu;
    r.transport_report["verbs_per_wall_s"] = wall > 0 ? static_cast<double>(rep.verbs) / wall : 0.0;
    r.transport_report["verbs_per_cpu_s"] = cpu > 0 ? static_cast<double>(rep.verbs) / cpu : 0.0;
    r.transport_summary = "sim: " + rep.describe() +
                          fmt::format(", {:.2f} M simulated verbs per CPU s",
                                      cpu > 0 ? static_cast<double>(rep.verbs) / cpu / 1e6 : 0.0);
    if (rep.coherence != sim::Coherence::kCoherent) {
      // Lines per operation: deterministic for a given history of verbs.
      const double ops = r.all.count ? static_cast<double>(r.all.count) : 1.0;
      const sim::CoherenceCounters& c = rep.coherence_counts;
      r.transport_report["coherence"]["lines_invalidated_per_op"] = c.lines_invalidated / ops;
      r.transport_report["coherence"]["lines_written_back_per_op"] = c.lines_written_back / ops;
      r.transport_report["coherence"]["flush_ns_per_op"] = c.flush_ps / 1000.0 / ops;
      r.transport_report["coherence"]["stale_lines_per_op"] = c.stale_lines / ops;
      r.transport_summary += fmt::format(
          "; coherence {}: {:.2f} lines invalidated, {:.2f} written back, {:.1f} ns of flushes "
          "per op",
          sim::coherence_name(rep.coherence), c.lines_invalidated / ops, c.lines_written_back / ops,
          c.flush_ps / 1000.0 / ops);
    }
  }
  uint64_t pool_bytes_used() const {
    uint64_t n = 0;
    for (NodeId m : cluster.config().memory_nodes()) n += cluster.pool()->heap_used(m);
    return n;
  }

  sim::Cluster cluster;
  std::chrono::steady_clock::time_point wall_before;
  double cpu_before = 0;
};

}  // namespace dmrt::bench
