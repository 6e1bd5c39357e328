// Where memory-node services run on sim (dmrt/runtime/service_hosting.h): fibers in the simulation,
// on the memory node's cores, their work charged as that node's CPU.
#pragma once

#include <memory>
#include <utility>

#include "dmrt/policies/sim/service.h"
#include "dmrt/policies/sim/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/service_hosting.h"

namespace dmrt {

inline ServiceHosting<SimTransport> service_hosting(Client<SimTransport>& setup) {
  using Hosting = ServiceHosting<SimTransport>;
  Hosting h;
  h.virtual_time = true;
  auto core = setup.endpoint().core_ptr();
  // Frozen between runs of the simulation, stopped (in virtual time) when stop() is called.
  h.start = [core](NodeId node, unsigned fibers, ServiceBody<SimTransport> body) -> Hosting::Stop {
    auto host = std::make_shared<sim::ServiceHost>(core, node, fibers, std::move(body));
    return [host] { host->stop(); };
  };
  return h;
}

}  // namespace dmrt
