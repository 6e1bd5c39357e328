// Per-transport environment for dmrt-bench: how to build the cluster, hand out endpoints, thread
// hooks for the Scheduler, and the pool figures. To add a transport, specialize Env<T> here (or in
// its own header included below) and add one case to the switch in bench/main.cpp.
#pragma once

#include <cstdint>
#include <memory>

#include <boost/fiber/operations.hpp>

#include "bench/options.h"
#include "bench/report.h"
#include "policies/shm/pool.h"
#include "policies/shm/transport.h"
#include "runtime/cluster.h"
#include "runtime/scheduler.h"

#if DMRT_TRANSPORT_SIM
#include "policies/sim/cluster.h"
#include "policies/sim/report_json.h"
#endif

namespace dmrt::bench {

template <class T>
struct Env;  // specialized per transport

// Every Env<T> offers: a constructor from (Options, ClusterConfig); endpoint(home, id); hooks()
// for the Scheduler; between_ops(client); config(); pool_bytes_used(); begin_phase() and
// end_phase(PhaseResult&) around each measured phase.
template <>
struct Env<ShmTransport> {
  Env(const Options& opt, const ClusterConfig& config) : pool(shm::Pool::create(config)) {
    pool->set_yield_per_round_trip(opt.shm_interleave);
  }

  shm::Endpoint endpoint(NodeId home, uint32_t client_id) {
    return shm::Endpoint(pool, home, client_id);
  }
  ThreadHooks hooks() { return {}; }
  // Called after every operation. shm verbs complete inline and never suspend, so without a yield
  // one fiber would run its whole share before the next fiber of its thread starts; yielding
  // interleaves a thread's clients operation by operation, as concurrent clients would be.
  template <class C>
  void between_ops(C&) {
    boost::this_fiber::yield();
  }
  const ClusterConfig& config() const { return pool->config(); }
  void begin_phase() {}
  void end_phase(PhaseResult&) {}
  // Bytes the allocator has handed out, summed over memory nodes.
  uint64_t pool_bytes_used() const {
    uint64_t n = 0;
    for (NodeId m : pool->config().memory_nodes()) n += pool->heap_used(m);
    return n;
  }

  std::shared_ptr<shm::Pool> pool;
};

#if DMRT_TRANSPORT_SIM
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
    return o;
  }
  sim::Endpoint endpoint(NodeId home, uint32_t client_id) {
    return cluster.endpoint(home, client_id);
  }
  ThreadHooks hooks() { return cluster.hooks(); }
  template <class C>
  void between_ops(C&) {}  // the virtual-time scheduler already interleaves clients
  const ClusterConfig& config() const { return cluster.config(); }
  void begin_phase() { cluster.reset_stats(); }
  void end_phase(PhaseResult& r) {
    sim::Report rep = cluster.report();
    r.transport_report = rep;
    r.transport_report["options"] = cluster.options();
    r.transport_summary = "sim: " + rep.describe();
  }
  uint64_t pool_bytes_used() const {
    uint64_t n = 0;
    for (NodeId m : cluster.config().memory_nodes()) n += cluster.pool()->heap_used(m);
    return n;
  }

  sim::Cluster cluster;
};
#endif

}  // namespace dmrt::bench
