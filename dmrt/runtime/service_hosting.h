// Where a process's memory-node services run, as each transport answers for a setup client: on
// a host this process starts, or in another process (its dmrt-node), which an index then finds
// through the node's services word (dmrt/runtime/services_word.h). Indexes take a ServiceHosting
// and never name a transport; each transport builds its own (dmrt/policies/NAME/hosting.h,
// `service_hosting(Client<T>&)`).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/service.h"
#include "dmrt/runtime/transport.h"

namespace dmrt {

template <Transport T>
struct ServiceHosting {
  using Stop = std::function<void()>;  // stops the fibers and re-throws what one threw
  struct Part {
    NodeId node;
    unsigned fibers;
    ServiceBody<T> body;
  };

  // Starts `fibers` fibers of `body` homed on memory node `node`. Empty: this process hosts no
  // service, the memory nodes' processes do.
  std::function<Stop(NodeId node, unsigned fibers, ServiceBody<T> body)> start;
  // Several services' fibers on one OS thread, each homed on its own node, where the transport
  // offers it (shm): on a machine with few cores a request that crosses services is then a fiber
  // switch instead of handoffs between threads. Empty where it does not.
  std::function<Stop(std::vector<Part> parts)> start_joint;
  // A service that waits for messages need not sleep when idle where the transport wakes idle
  // threads when a message comes (shm's bells, dmrt/policies/shm/idle.h): its sleep only adds
  // latency. One that polls memory still should.
  bool wakes_on_message = false;
  // Time is virtual (sim): a wall-clock sleep only slows the run down, whatever the service.
  bool virtual_time = false;
  // A round trip an index should still tolerate from a slow peer before it takes it for gone (a
  // floor for grace periods), where the transport can be that slow: a software RDMA device under
  // an emulated CPU takes tens of milliseconds per loopback READ. 0: no floor.
  uint64_t slow_round_trip_ns = 0;

  bool hosted_here() const { return static_cast<bool>(start); }
};

// An index created with its memory-node services: `stop` stops them (empty when none run here).
template <class I>
struct Deployed {
  std::shared_ptr<I> index;
  std::function<void()> stop;
};

}  // namespace dmrt
