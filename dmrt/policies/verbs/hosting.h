// Where memory-node services run on verbs (dmrt/runtime/service_hosting.h): in the one-process mode
// (every memory node's Cluster in this process) on a thread of the node's own Cluster; with a
// cluster of processes, in the memory nodes' dmrt-node (--service NAME).
#pragma once

#include <memory>
#include <utility>

#include "dmrt/policies/verbs/service.h"
#include "dmrt/policies/verbs/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/service_hosting.h"

namespace dmrt {

inline ServiceHosting<VerbsTransport> service_hosting(Client<VerbsTransport>& setup) {
  using Hosting = ServiceHosting<VerbsTransport>;
  Hosting h;
  // Soft-RoCE on an emulated CPU takes tens of milliseconds per loopback READ.
  h.slow_round_trip_ns = 100'000'000;
  verbs::Cluster& self = setup.endpoint().cluster();
  for (NodeId m : setup.memory_nodes())
    if (!self.colocated(m)) return h;  // the memory nodes are other processes
  h.start = [&self](NodeId node, unsigned fibers,
                    ServiceBody<VerbsTransport> body) -> Hosting::Stop {
    auto host = std::make_shared<verbs::ReservedServiceHost>(*self.colocated(node), fibers,
                                                             std::move(body));
    return [host] { host->stop(); };
  };
  return h;
}

}  // namespace dmrt
