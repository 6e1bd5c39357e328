// ServiceHost for verbs: a memory-node service as an OS thread of the node's own process
// (dmrt-node).
#pragma once

#include <memory>
#include <utility>

#include "policies/verbs/transport.h"
#include "runtime/scheduler.h"
#include "runtime/service.h"

namespace dmrt::verbs {

// Runs `fibers` fibers of `body` on a thread of its own, bound to client-thread slot `slot` of
// `cluster` (built with Options::threads > slot), homed on the cluster's own node. Its verbs to
// that node go through the NIC like anyone's (a loopback QP), so the service rule of
// runtime/service.h holds: words compute nodes touch with RDMA atomics are changed by RDMA atomics.
// stop() (or the destructor) raises the stop flag, joins, and re-throws what a fiber threw.
class ServiceHost : public ServiceThread {
 public:
  ServiceHost(Cluster& cluster, unsigned slot, unsigned fibers, ServiceBody<VerbsTransport> body,
              ClientOptions opts = {}) {
    start([&cluster, slot, fibers, body = std::move(body), opts](const std::atomic<bool>& stop) {
      std::unique_ptr<Cluster::ThreadBinding> binding;
      ThreadHooks hooks;
      hooks.on_start = [&](unsigned) {
        binding = std::make_unique<Cluster::ThreadBinding>(cluster, slot);
      };
      hooks.on_stop = [&](unsigned) { binding.reset(); };
      Scheduler sched({1, fibers});
      sched.run(
          [&](const WorkerId& w) {
            Client<VerbsTransport> c(
                cluster.endpoint(cluster.self(), kServiceClientIdBase + w.fiber), opts);
            ServiceContext<VerbsTransport> ctx(c, cluster.local_region(),
                                               cluster.local_region_bytes(), w.fiber, stop);
            body(ctx);
          },
          hooks);
    });
  }
};

}  // namespace dmrt::verbs
