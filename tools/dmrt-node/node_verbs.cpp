// dmrt-node on verbs: serves one node of an RDMA cluster (its region registered and formatted,
// the TCP bootstrap on its address) and hosts the echo service and the requested services, each
// on a client-thread slot of its own, until a peer sends STOP or SIGINT/SIGTERM arrives.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "dmrt/policies/verbs/cluster.h"
#include "dmrt/policies/verbs/service.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "tools/dmrt-node/node.h"

namespace dmrt::node {

int run_verbs(const VerbsArgs& va, const NodeArgs& args, const Services& registry) {
  if (!va.stop.empty()) {
    // The cluster file names the secret_file, if any; else DMRT_CLUSTER_SECRET is used.
    std::optional<ClusterConfig> config;
    if (!va.cluster_file.empty()) config = ClusterConfig::from_toml_file(va.cluster_file);
    verbs::Cluster::stop_node(va.stop, va.opts.connect_timeout_ms, config ? &*config : nullptr);
    std::cout << "dmrt-node at " << va.stop << " stopped" << std::endl;
    return 0;
  }
  if (va.cluster_file.empty() == va.nodes.empty())
    throw ConfigError("give exactly one of --cluster FILE and --nodes SPEC");
  if (args.node < 0) throw ConfigError("--node N is required");
  ClusterConfig config = va.cluster_file.empty() ? verbs::parse_cluster_arg(va.nodes)
                                                 : ClusterConfig::from_toml_file(va.cluster_file);
  const auto node = static_cast<NodeId>(args.node);
  if (static_cast<size_t>(args.node) >= config.size())
    throw ConfigError("--node " + std::to_string(args.node) + " but the cluster has " +
                      std::to_string(config.size()) + " nodes");
  if (config.nodes[node].address.empty())
    throw ConfigError("node " + std::to_string(node) + " has no address to serve on");

  // One client-thread slot per host: the echo service and each requested service.
  verbs::Options opts = va.opts;
  opts.threads =
      static_cast<unsigned>(std::max<size_t>(1, (args.echo ? 1 : 0) + args.services.size()));
  verbs::Cluster cluster(config, node, opts);
  std::cout << cluster.report() << std::endl;
  Heartbeat beat(cluster.local_region());

  Launcher<VerbsTransport, verbs::ReservedServiceHost> launcher(
      node, [&cluster](unsigned fibers, ServiceBody<VerbsTransport> body) {
        return std::make_unique<verbs::ReservedServiceHost>(cluster, fibers, std::move(body));
      });
  EchoCounters echo;
  bool ok = true;
  try {
    // Advertised once every host has started: compute nodes read it to find the services.
    // Written by this CPU only; no one changes it with RDMA atomics.
    uint64_t word = start_services(args, registry, launcher, echo);
    local::store_word(cluster.local_region() + layout::kServicesOffset,
                      word | layout::kServicesReady);
    std::cout << "dmrt-node " << node << " ready on " << config.nodes[node].address << std::endl;
    // A failed service (an index placing it elsewhere, too few fibers...) stops the node, so
    // that its compute nodes see an error instead of waiting for answers that never come.
    wait_until_stopped([&] { return cluster.stop_requested() || launcher.any_failed(); });
  } catch (...) {
    cluster.request_stop();
    launcher.stop_all();
    throw;
  }
  cluster.request_stop();
  ok = launcher.stop_all();
  return report_stopped(node, args, echo, ok);
}

}  // namespace dmrt::node
