// dmrt-node on shm: attaches to a named shm pool created by another process (shm::Pool::create
// with a name, e.g. a CXL-emulation run) and hosts the echo service and the requested services
// on one of its nodes, each a shm::ServiceHost thread, until SIGINT/SIGTERM arrives.
#include <iostream>
#include <memory>
#include <string>

#include "policies/shm/pool.h"
#include "policies/shm/service.h"
#include "runtime/error.h"
#include "runtime/layout.h"
#include "runtime/local_memory.h"
#include "tools/dmrt-node/node.h"

namespace dmrt::node {

int run_shm(const std::string& pool_name, const NodeArgs& args, const Services& registry) {
  if (pool_name.empty()) throw ConfigError("--transport shm needs --pool NAME");
  if (args.node < 0) throw ConfigError("--node N is required");
  std::shared_ptr<shm::Pool> pool = shm::Pool::attach(pool_name);
  if (static_cast<size_t>(args.node) >= pool->node_count())
    throw ConfigError("--node " + std::to_string(args.node) + " but pool '" + pool_name + "' has " +
                      std::to_string(pool->node_count()) + " nodes");
  const auto node = static_cast<NodeId>(args.node);
  Launcher<ShmTransport, shm::ServiceHost> launcher(
      node, [pool, node](unsigned fibers, ServiceBody<ShmTransport> body) {
        return std::make_unique<shm::ServiceHost>(pool, node, fibers, std::move(body));
      });
  EchoCounters echo;
  try {
    uint64_t word = start_services(args, registry, launcher, echo);
    // Services of other node processes may share this pool's nodes: add our bits to the word.
    auto w = local::word(pool->region(node).base + layout::kServicesOffset);
    w.fetch_or(word | layout::kServicesReady);
    std::cout << "dmrt-node " << node << " ready on shm pool '" << pool_name << "'" << std::endl;
    wait_until_stopped([&] { return launcher.any_failed(); });
  } catch (...) {
    launcher.stop_all();
    throw;
  }
  return report_stopped(node, args, echo, launcher.stop_all());
}

}  // namespace dmrt::node
