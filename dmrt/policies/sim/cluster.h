// sim::Cluster: owns the pool and the simulator, runs compute_nodes x clients_per_node client
// fibers on one OS thread in virtual time, and reports NIC utilisation and the bottleneck.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dmrt/policies/shm/pool.h"
#include "dmrt/policies/sim/core.h"
#include "dmrt/policies/sim/options.h"
#include "dmrt/policies/sim/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/scheduler.h"
#include "dmrt/runtime/stats.h"

namespace dmrt::sim {

using SimClient = Client<SimTransport>;

// Who a simulated client is, and the run's stop condition in virtual time.
struct WorkerInfo {
  unsigned index = 0;  // 0 .. total-1, dense
  unsigned total = 0;
  NodeId home = 0;           // compute node: compute_nodes()[index / clients_per_node]
  unsigned local = 0;        // index among its node's clients
  uint32_t client_id = 0;    // == index (globally unique; reply mailbox 1 + index)
  uint64_t start_ns = 0;     // virtual time the run started
  uint64_t deadline_ns = 0;  // start_ns + RunOptions::duration_ns, 0 when the run has no duration
  const Core* core = nullptr;

  uint64_t now_ns() const { return core->now_ns(); }
  // True once virtual time reached the run's deadline (never when it has none).
  bool expired() const { return deadline_ns != 0 && core->now_ns() >= deadline_ns; }
};

struct RunOptions {
  // Virtual duration: WorkerInfo::expired() turns true this long after the start (0 = none; the
  // bodies then stop by themselves, e.g. after N operations each).
  uint64_t duration_ns = 0;
  ClientOptions client;  // for run(): the options of each Client
  unsigned clients = 0;  // for run(): how many clients (0 = compute_nodes x clients_per_node)
};

// A resource busy for at least this fraction of the report window counts as saturated.
inline constexpr double kSaturatedUtil = 0.9;

// Utilisation of one node's NIC over the report window (fractions of the configured limits).
struct NicReport {
  NodeId node = 0;
  std::string role;       // "memory" or "compute"
  uint64_t ops = 0;       // verbs through this NIC (posted or served)
  uint64_t tx_bytes = 0;  // wire bytes, headers included
  uint64_t rx_bytes = 0;
  double mops = 0;  // achieved rates
  double tx_gbps = 0;
  double rx_gbps = 0;
  double iops_util = 0;  // ops / (nic_mops x window)
  double tx_util = 0;    // tx time / window
  double rx_util = 0;
  double bw_util = 0;      // max(tx_util, rx_util)
  double avg_wait_ns = 0;  // mean queueing delay per verb at this NIC
  // Among this NIC's resources busy for >= kSaturatedUtil of the window, the one that first made
  // a verb wait >= saturation_wait_ns ("" if none) and the virtual time that happened.
  std::string saturated;
  uint64_t saturated_at_ns = 0;
};

// What the memory-node services of one node did over the report window (only nodes with any).
struct ServiceReport {
  NodeId node = 0;
  std::string role;
  uint64_t local_verbs = 0;  // verbs to their own node, served by its CPU instead of its NIC
  uint64_t local_bytes = 0;
  uint64_t messages = 0;  // messages taken from mailboxes
  uint64_t wakeups = 0;   // idle pauses ended by a change to the node's memory
  uint64_t cpu_ns = 0;    // CPU time charged to the services (summed over their fibers)
  double cpu_util = 0;    // cpu_ns / window: cores' worth of CPU busy
};

struct Report {
  uint64_t start_ns = 0;  // report window (virtual time): since creation or reset_stats()
  uint64_t end_ns = 0;
  uint64_t elapsed_ns = 0;
  uint64_t verbs = 0;                   // verbs completed in the window
  uint64_t messages = 0;                // messages sent in the window
  uint64_t events = 0;                  // simulator events processed
  std::vector<NicReport> nics;          // one per node, by NodeId
  std::vector<ServiceReport> services;  // nodes whose memory-node services did anything
  // The most utilised resource, e.g. "node 0 (memory) NIC message rate", its utilisation, and
  // whether it is saturated (>= kSaturatedUtil); otherwise the run was latency- or CPU-bound.
  std::string bottleneck;
  double bottleneck_util = 0;
  bool saturated = false;
  // Over all NICs, the saturated resource (as in NicReport) that queued first, or "none".
  std::string saturated_first = "none";
  uint64_t saturated_first_at_ns = 0;

  // The coherence model (Options::coherence) and what it did in the window; its counts stay zero
  // under kCoherent, and the JSON and describe() then leave it out.
  Coherence coherence = Coherence::kCoherent;
  CoherenceCounters coherence_counts;

  // A short human-readable summary (one line per busy NIC).
  std::string describe() const;
};

class Cluster {
 public:
  using Body = std::function<void(SimClient&, const WorkerInfo&)>;
  using FiberBody = std::function<void(const WorkerInfo&)>;

  // ClusterConfig::embedded(memory_nodes, compute_nodes, memory_bytes, compute_bytes), with
  // enough mailboxes for every client to have a reply box. Throws ConfigError on bad options.
  explicit Cluster(Options opts);
  // A custom cluster shape (roles and region sizes from `config`); options' topology fields are
  // overwritten from it (compute_nodes/memory_nodes), clients_per_node is kept.
  Cluster(Options opts, const ClusterConfig& config);

  const Options& options() const { return core_->options(); }
  const ClusterConfig& config() const { return pool_->config(); }
  const std::shared_ptr<shm::Pool>& pool() const { return pool_; }
  const std::shared_ptr<Core>& core() const { return core_; }
  std::vector<NodeId> compute_nodes() const { return pool_->config().compute_nodes(); }
  std::vector<NodeId> memory_nodes() const { return pool_->config().memory_nodes(); }

  Endpoint endpoint(NodeId home, uint32_t client_id) const {
    return Endpoint(core_, home, client_id);
  }

  // Runs one Client per worker (compute_nodes x clients_per_node unless ro.clients says
  // otherwise), each a fiber on the calling OS thread, in virtual time; returns when all finished.
  // Memory-node services (service.h) run alongside and are frozen when the last client ends.
  // Worker exceptions are re-thrown as dmrt::WorkerFailure naming the first. The clients' counters
  // are summed into last_counters().
  void run(const Body& body, const RunOptions& ro = {});
  // The same with bare fibers: the body builds its own endpoints.
  void run_fibers(unsigned n, const FiberBody& body, const RunOptions& ro = {});

  // For dmrt::Scheduler with threads = 1 (it runs on the caller's thread): on_start installs the
  // virtual-time scheduler, on_stop restores round_robin.
  ThreadHooks hooks() const;

  uint64_t now_ns() const { return core_->now_ns(); }
  // NIC utilisation and the bottleneck since construction or the last reset_stats().
  Report report() const;
  // Starts a new report window at the current virtual time (e.g. after a load phase).
  void reset_stats() { core_->reset_stats(); }
  const Counters& last_counters() const { return counters_; }

 private:
  std::shared_ptr<shm::Pool> pool_;
  std::shared_ptr<Core> core_;
  Counters counters_;
};

}  // namespace dmrt::sim
