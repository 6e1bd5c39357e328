// Where memory-node services run on shm (dmrt/runtime/service_hosting.h): the pool's creator hosts
// them on threads of its own; a process that attached to another's pool hosts none (the pool's
// dmrt-node does).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "dmrt/policies/shm/service.h"
#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/service_hosting.h"

namespace dmrt {

inline ServiceHosting<ShmTransport> service_hosting(Client<ShmTransport>& setup) {
  using Hosting = ServiceHosting<ShmTransport>;
  Hosting h;
  h.wakes_on_message = true;  // the idle bells (dmrt/policies/shm/idle.h)
  shm::Pool& p = setup.endpoint().pool();
  if (!p.owner()) return h;
  // Non-owning: whoever made the setup client owns the pool and outlives the services.
  std::shared_ptr<shm::Pool> pool(std::shared_ptr<void>{}, &p);
  h.start = [pool](NodeId node, unsigned fibers, ServiceBody<ShmTransport> body) -> Hosting::Stop {
    auto host = std::make_shared<shm::ServiceHost>(pool, node, fibers, std::move(body));
    return [host] { host->stop(); };
  };
  h.start_joint = [pool](std::vector<Hosting::Part> parts) -> Hosting::Stop {
    std::vector<shm::JointServiceHost::Part> joint;
    for (Hosting::Part& part : parts)
      joint.push_back({part.node, part.fibers, std::move(part.body)});
    auto host = std::make_shared<shm::JointServiceHost>(pool, std::move(joint));
    return [host] { host->stop(); };
  };
  return h;
}

}  // namespace dmrt
