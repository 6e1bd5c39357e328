// ServiceHost for verbs: a memory-node service as an OS thread of the node's own process
// (dmrt-node).
#pragma once

#include <exception>
#include <memory>
#include <utility>

#include "dmrt/policies/verbs/transport.h"
#include "dmrt/runtime/scheduler.h"
#include "dmrt/runtime/service.h"

namespace dmrt::verbs {

// Runs `fibers` fibers of `body` on a thread of its own, bound to client-thread slot `slot` of
// `cluster` (built with Options::threads > slot), homed on the cluster's own node. Its verbs to
// that node go through the NIC like anyone's (a loopback QP), so the service rule of
// dmrt/runtime/service.h holds: words compute nodes touch with RDMA atomics are changed by RDMA
// atomics. stop() (or the destructor) raises the stop flag, joins, and re-throws what a fiber
// threw.
class ServiceHost : public ServiceThread {
 public:
  ServiceHost(Cluster& cluster, unsigned slot, unsigned fibers, ServiceBody<VerbsTransport> body,
              ClientOptions opts = {}) {
    start([this, &cluster, slot, fibers, body = std::move(body),
           opts](const std::atomic<bool>& stop) {
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
            run_fiber([&] { body(ctx); });  // a failure stops the other fibers too
          },
          hooks);
    });
  }
};

// A ServiceHost on a slot reserved from `cluster` (Cluster::reserve_slot) and given back once the
// host has stopped, for services started at run time, possibly several on one node (HStore's two
// servers may share a memory node, and a failed server is replaced by a new host).
class ReservedServiceHost {
 public:
  ReservedServiceHost(Cluster& cluster, unsigned fibers, ServiceBody<VerbsTransport> body,
                      ClientOptions opts = {})
      : cluster_(cluster), slot_(cluster.reserve_slot()) {
    try {
      host_ = std::make_unique<ServiceHost>(cluster, slot_, fibers, std::move(body), opts);
    } catch (...) {
      cluster_.release_slot(slot_);
      throw;
    }
  }
  ~ReservedServiceHost() {
    try {
      stop();
    } catch (...) {
      // A destructor cannot report; call stop() to see the failure.
    }
  }
  ReservedServiceHost(const ReservedServiceHost&) = delete;
  ReservedServiceHost& operator=(const ReservedServiceHost&) = delete;

  // Stops and joins the host, releases the slot, and re-throws what a fiber threw.
  void stop() {
    if (!host_) return;
    std::exception_ptr failure;
    try {
      host_->stop();
    } catch (...) {
      failure = std::current_exception();
    }
    host_.reset();
    cluster_.release_slot(slot_);
    if (failure) std::rethrow_exception(failure);
  }
  unsigned slot() const { return slot_; }
  bool failed() const { return host_ && host_->failed(); }

 private:
  Cluster& cluster_;
  unsigned slot_;
  std::unique_ptr<ServiceHost> host_;
};

}  // namespace dmrt::verbs
