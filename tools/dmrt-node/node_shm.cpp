// dmrt-node on shm: the memory-node process of a multi-process shm run. With --create it creates
// the pool (a cluster file's nodes, or an embedded cluster; memory regions bound to a NUMA
// node when asked), otherwise it attaches to one another process made; either way it hosts the
// echo service and the requested services on one of the pool's nodes, each a shm::ServiceHost
// thread, until SIGINT/SIGTERM arrives. A named pool it created is removed when it stops; a pool
// on a device or file (--pool PATH) is closed (its magic word cleared) and the path stays.
#include <iostream>
#include <memory>
#include <string>

#include "dmrt/policies/shm/pool.h"
#include "dmrt/policies/shm/service.h"
#include "dmrt/policies/shm/source.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/placement.h"
#include "tools/dmrt-node/node.h"

namespace dmrt::node {

namespace {

// Which device or file serves a pool from a path, and how its processes wait.
void describe_source(const shm::Pool& pool) {
  const shm::PoolProvenance p = pool.provenance();
  std::cout << "dmrt-node: pool on " << p.kind << " " << p.path << ": " << p.kernel_path << "; "
            << (p.pool_bytes >> 20) << " MiB of its " << (p.source_bytes >> 20) << " MiB";
  if (p.device_numa_node >= 0) std::cout << "; the device is on NUMA node " << p.device_numa_node;
  if (p.numa_node >= 0) std::cout << "; bound to NUMA node " << p.numa_node << " (mbind)";
  std::cout << "; waits poll (no futex: its processes may be on other hosts)" << std::endl;
}

// The pool a --create run makes: the cluster file, or the embedded cluster of the flags.
std::shared_ptr<shm::Pool> create_pool(const ShmArgs& sa, const NodeArgs& args) {
  ClusterConfig config =
      args.cluster_file.empty()
          ? ClusterConfig::embedded(sa.memory_nodes, sa.compute_nodes, sa.memory_mb << 20)
          : ClusterConfig::from_toml_file(args.cluster_file);
  const bool path = shm::PoolSource::is_path(sa.pool);
  // A pool on a device or file is one mapping: the binding is the whole mapping's.
  if (sa.numa_node >= 0 && !path)
    for (NodeId m : config.memory_nodes()) config.nodes[m].numa_node = sa.numa_node;
  auto pool = path ? shm::Pool::create(config, shm::PoolSource{sa.pool, sa.numa_node})
                   : shm::Pool::create(config, sa.pool);
  std::cout << "dmrt-node: created shm pool '" << sa.pool << "': " << config.size() << " nodes ("
            << config.memory_nodes().size() << " memory, " << config.compute_nodes().size()
            << " compute)" << std::endl;
  if (path) describe_source(*pool);
  // Where the memory lies: the binding asked for, and where the pages written so far (each
  // region's header and mailboxes) landed.
  const int host_nodes = placement::host_numa_nodes();
  for (NodeId m : config.memory_nodes()) {
    const shm::Region& r = pool->region(m);
    std::cout << "dmrt-node: memory node " << m << ": " << (r.bytes >> 20) << " MiB, ";
    if (config.nodes[m].numa_node >= 0)
      std::cout << "bound to NUMA node " << config.nodes[m].numa_node << " (mbind)";
    else
      std::cout << "not bound to a NUMA node";
    placement::PageNodes where = placement::page_nodes(r.base, r.bytes);
    if (where.available) {
      std::cout << "; resident pages by NUMA node:";
      for (auto [node, pages] : where.pages) std::cout << " " << node << ":" << pages;
      std::cout << " (of " << where.sampled << " sampled, " << where.absent << " not yet touched)";
    }
    std::cout << std::endl;
  }
  if (host_nodes == 1)
    std::cout << "dmrt-node: this host has one NUMA node: no memory is on a far socket; the "
                 "far-memory cost model (dmrt-bench --shm-latency-ns, --shm-preset) stands in "
                 "for it"
              << std::endl;
  return pool;
}

}  // namespace

int run_shm(const ShmArgs& sa, const NodeArgs& args, const Services& registry) {
  if (sa.pool.empty()) throw ConfigError("--transport shm needs --pool NAME or --pool PATH");
  const bool path = shm::PoolSource::is_path(sa.pool);
  if (!sa.create && !args.cluster_file.empty() && !path)
    throw ConfigError(
        "--cluster with --transport shm needs --create (an attached pool's nodes "
        "are the creator's), or a pool on a device or file, whose geometry it then checks");
  std::shared_ptr<shm::Pool> pool;
  if (sa.create) {
    pool = create_pool(sa, args);
  } else if (path) {
    // With --cluster, a pool of another geometry is refused rather than served.
    ClusterConfig expect;
    if (!args.cluster_file.empty()) expect = ClusterConfig::from_toml_file(args.cluster_file);
    pool = shm::Pool::attach(shm::PoolSource{sa.pool, -1},
                             args.cluster_file.empty() ? nullptr : &expect);
    describe_source(*pool);
  } else {
    pool = shm::Pool::attach(sa.pool);
  }
  long node_id = args.node;
  if (node_id < 0) {
    if (!sa.create) throw ConfigError("--node N is required");
    node_id = pool->config().memory_nodes().front();  // the created pool's first memory node
  }
  if (static_cast<size_t>(node_id) >= pool->node_count())
    throw ConfigError("--node " + std::to_string(node_id) + " but pool '" + sa.pool + "' has " +
                      std::to_string(pool->node_count()) + " nodes");
  const auto node = static_cast<NodeId>(node_id);
  auto serve = [&] {
    Heartbeat beat(pool->region(node).base);
    Launcher<ShmTransport, shm::ServiceHost> launcher(
        node, [pool, node](unsigned fibers, ServiceBody<ShmTransport> body) {
          return std::make_unique<shm::ServiceHost>(pool, node, fibers, std::move(body));
        });
    EchoCounters echo;
    try {
      uint64_t word = start_services(args, registry, launcher, echo);
      // The echo service answers clock requests: processes on other hosts of a pool on a device
      // or file measure their clocks against this one (bench/transports/shm_env.h).
      if (args.echo) word |= layout::kServicesClock;
      // Services of other node processes may share this pool's nodes: add our bits to the word.
      auto w = local::word(pool->region(node).base + layout::kServicesOffset);
      w.fetch_or(word | layout::kServicesReady);
      std::cout << "dmrt-node " << node << " ready on shm pool '" << sa.pool << "'" << std::endl;
      // A compute process's --stop-nodes, once the run is over: the launcher's job then ends.
      std::byte* stop_word = pool->region(node).base + layout::kStopRequestOffset;
      wait_until_stopped([&] { return launcher.any_failed() || local::load_word(stop_word) != 0; });
    } catch (...) {
      launcher.stop_all();
      throw;
    }
    return report_stopped(node, args, echo, launcher.stop_all());
  };
  const int rc = serve();
  if (sa.create) {
    pool.reset();  // the last reference: unmaps and removes /dev/shm/dmrt.NAME.*, or closes PATH
    std::cout << "dmrt-node: " << (path ? "closed" : "removed") << " shm pool '" << sa.pool << "'"
              << std::endl;
  }
  return rc;
}

}  // namespace dmrt::node
