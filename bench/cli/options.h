// Parsed dmrt-bench command line (see bench/main.cpp for the flags, docs/bench.md for meanings).
#pragma once

#include <cstdint>
#include <string>

#include "bench/workload/key_codec.h"
#include "bench/workload/workload.h"
#include "dmrt/check/report.h"
#include "dmrt/policies/shm/source.h"
#include "dmrt/runtime/cluster.h"

#if DMRT_TRANSPORT_SIM
#include "dmrt/policies/sim/options.h"
#endif
#if DMRT_TRANSPORT_VERBS
#include "dmrt/policies/verbs/device.h"
#endif

namespace dmrt::bench {

struct Options {
  std::string index;
  std::string transport = "shm";
  std::string workload = "c";
  uint64_t keys = 1'000'000;
  uint64_t ops = 1'000'000;  // run phase length when seconds == 0
  double seconds = 0;        // run phase length in seconds (transport clock) when > 0
  unsigned threads = 1;
  unsigned fibers = 1;
  std::string distribution = "zipfian";  // effective distribution (D defaults to latest)
  double zipf_theta = 0.99;
  size_t value_size = 8;
  size_t key_size =
      8;  // bytes per key: 8 = integer keys; more = byte strings (bench/workload/key_codec.h)
  std::string key_format = "user";  // --key-size > 8: user or random (bench/workload/key_codec.h)
  double cache_mb = 0;
  uint64_t seed = 1;
  std::string key_order = "hashed";
  std::string keyset =
      "ycsb";           // which keys records stand for (KeyMap in bench/workload/workload.h)
  std::string json;     // "" = none, "-" = stdout, else a file (JSON Lines, appended)
  std::string cluster;  // TOML cluster file; "" = embedded
  unsigned memory_nodes = 1;
  unsigned compute_nodes = 1;  // embedded cluster (shm); on sim, sim.compute_nodes
  uint64_t memory_mb = 4096;
  uint64_t memory_bytes = 0;      // region per memory node of the embedded cluster: --memory-mb, or
                                  // --sim-memory-bytes on sim (main.cpp decides)
  bool shm_interleave = false;    // shm: fibers yield after every round trip (Pool)
  std::string shm_mode = "auto";  // shm: round-trip execution: inline, prefetch, or auto (Pool)
  std::string shm_coherence = "none";  // shm: none, or flush (non-coherent CXL port; Pool)
  std::string shm_preset;              // shm: far-memory figures for every memory node ("" = none)
  int64_t shm_latency_ns = -1;         // shm: per memory node, over the preset (-1 = not given)
  double shm_gbps = -1;                // shm: per memory node, over the preset (-1 = not given)
#if DMRT_TRANSPORT_SIM
  sim::Options sim = sim::Options::preset("rdma-cx6");  // --transport sim: cluster and cost model
#endif
#if DMRT_TRANSPORT_VERBS
  verbs::Options verbs;  // --transport verbs: device and queue-pair settings
#endif
  std::string nodes;  // verbs: the cluster inline, role:size@host:port,... ("" = --cluster)
  int node = -1;  // verbs, shm --attach: this process's node id (-1: the cluster's compute node)
  std::string node_from;     // verbs: the launcher variable --node came from ("" = the flag)
  shm::PoolSource shm_pool;  // shm: the pool this process creates lies on this device or file
  std::string attach;        // shm: run as compute node `node` of this pool (a name, or a path)
  double attach_wait_seconds = 60;   // several compute processes: how long to wait for the others
  double peer_timeout_seconds = 10;  // several compute processes: a heartbeat this old is lost
  std::string merged_json;           // the creator of a multi-process run merges --json parts here
  std::string cpus;                  // bind this process's threads to these CPUs ("" = no)
  int numa_node = -1;                // run this process on this NUMA node (-1 = no)
  bool stop_nodes = false;           // verbs: ask the memory nodes (dmrt-node) to exit at the end
  std::string trace_load;   // a YCSB trace file for the load phase (bench/workload/trace.h)
  std::string trace_run;    // and one for the run phase
  std::string write_trace;  // write the generated load and run phases as trace files here
  bool verify = false;
  uint64_t verify_max_ops = ~uint64_t{0};  // --verify --seconds: the run phase ends here
  std::string history;  // --verify: also save the recorded history here (dmrt/check/history_io.h)
  std::string json_template, history_template;  // --json, --history as given, before {node}
  CheckBudget check_budget;                     // --verify: deadline and memory of the check
  bool quiet = false;                           // no table on stdout
  std::string progress = "auto";  // tty, lines or off once main.cpp resolved auto (runner.h)
  double stall_seconds = 60;  // an operation running this long (wall clock) ends the run: exit 1

  // The far-memory flags, over what the cluster (file) gives every memory node.
  void apply_far_flags(ClusterConfig& config) const {
    for (NodeId n : config.memory_nodes()) {
      FarMemoryCost& far = config.nodes[n].far;
      if (!shm_preset.empty()) far = FarMemoryCost::preset(shm_preset);
      if (shm_latency_ns >= 0) far.latency_ns = static_cast<uint64_t>(shm_latency_ns);
      if (shm_gbps >= 0) far.gbps = shm_gbps;
    }
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

}  // namespace dmrt::bench
