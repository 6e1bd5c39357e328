// ServiceHost for sim: memory-node service fibers in virtual time, their work charged as that
// node's CPU.
#pragma once

#include <atomic>
#include <boost/fiber/fiber.hpp>
#include <boost/fiber/fixedsize_stack.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dmrt/policies/sim/cluster.h"
#include "dmrt/policies/sim/transport.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/scheduler.h"
#include "dmrt/runtime/service.h"

namespace dmrt::sim {

// Runs `fibers` fibers of `body` homed on `node`, scheduled by the simulator like clients (the
// same API as shm::ServiceHost). Each fiber is one core of the node:
//  * its verbs to `node` are local accesses: applied at once, charged service_access_ns plus
//    bytes at service_gbps of its CPU time, never the NIC; verbs and messages to other nodes
//    cross the NICs like any client's;
//  * a message it takes from a mailbox costs service_msg_ns; charge_cpu() on its endpoint adds
//    more (work the model should see, e.g. reading `region()` directly, which is untimed);
//  * its pause() (ServiceContext::next_message polls with it) lasts poll_ns and then sleeps until
//    the node's memory changes or service_idle_ns pass, so an idle service costs almost nothing.
// Lifetime, in virtual time: the fibers start with the first run that follows construction (at
// once when constructed inside a run); when a run's last client finishes, they are frozen where
// they are, with their pending verbs, and resume in the next run, so they never keep a run alive.
// stop() (or the destructor) raises the stop flag and lets them finish (running the simulation
// briefly when called outside a run), then re-throws what a fiber threw as WorkerFailure.
// Boost fibers cannot change threads: run the simulation and stop the host on one OS thread (the
// thread of Cluster::run and of a Scheduler with the cluster's hooks is the caller's).
class ServiceHost {
 public:
  ServiceHost(std::shared_ptr<Core> core, NodeId node, unsigned fibers,
              ServiceBody<SimTransport> body, ClientOptions opts = {})
      : core_(std::move(core)), node_(node), body_(std::move(body)) {
    if (!core_) throw ConfigError("sim::ServiceHost needs a simulation");
    if (node >= core_->pool().node_count())
      throw ConfigError("sim::ServiceHost: node " + std::to_string(node) + " does not exist");
    if (fibers == 0) throw ConfigError("sim::ServiceHost needs at least one fiber");
    for (unsigned f = 0; f < fibers; ++f)
      clients_.push_back(std::make_unique<Client<SimTransport>>(
          Endpoint::service(core_, node, kServiceClientIdBase + f), opts));
    token_ = core_->add_service_starter([this] {
      if (!launched_) launch();
    });
    if (core_->active_here()) launch();
  }
  ServiceHost(const Cluster& cluster, NodeId node, unsigned fibers, ServiceBody<SimTransport> body,
              ClientOptions opts = {})
      : ServiceHost(cluster.core(), node, fibers, std::move(body), opts) {}

  ~ServiceHost() {
    try {
      stop();
    } catch (...) {
      // A destructor cannot report; call stop() to see the failure.
    }
    if (launched_ && !joined_) {
      // The fibers point into this object; letting them outlive it would be a use after free.
      std::fputs(
          "dmrt sim: a ServiceHost was destroyed while its fibers could not be stopped "
          "(destroyed on another thread than the simulation's?)\n",
          stderr);
      std::abort();
    }
  }
  ServiceHost(const ServiceHost&) = delete;
  ServiceHost& operator=(const ServiceHost&) = delete;

  void stop() {
    if (!stop_requested_) {
      stop_requested_ = true;
      stop_.store(true, std::memory_order_relaxed);
      core_->remove_service_starter(token_);
    }
    if (launched_ && !joined_) {
      if (core_->active_here()) {
        core_->wake_services();
        join_all();
      } else {
        // Outside a run: run the simulation until the fibers have returned. attach() refuses
        // another thread than the one the fibers live on (ConfigError).
        core_->attach(core_);
        core_->wake_services();
        join_all();
        core_->detach();
      }
      joined_ = true;
      core_->service_stopped();
    }
    if (first_failure_) {
      std::exception_ptr e = std::exchange(first_failure_, nullptr);
      throw WorkerFailure(
          "memory-node service on node " + std::to_string(node_) + " (fiber " +
              std::to_string(first_fiber_) + ") failed: " + describe(e) +
              (failed_ > 1 ? " (" + std::to_string(failed_ - 1) + " more failed)" : ""),
          e, failed_);
    }
  }

  NodeId node() const { return node_; }
  unsigned fibers() const { return static_cast<unsigned>(clients_.size()); }
  // Started (inside a run) and not stopped yet.
  bool running() const { return launched_ && !joined_; }
  // The service fibers' verbs and messages, local ones included (each Client counts its own).
  Counters counters() const {
    Counters c;
    c.by_node.resize(core_->pool().node_count());
    for (const auto& cl : clients_) c += cl->counters();
    return c;
  }

 private:
  // On the simulation thread, with the virtual-time scheduler installed: new fibers are due now.
  void launch() {
    launched_ = true;
    core_->service_launched();
    const shm::Region& r = core_->pool().region(node_);
    fibers_.reserve(clients_.size());
    for (unsigned f = 0; f < clients_.size(); ++f)
      fibers_.emplace_back(
          std::allocator_arg, boost::fibers::fixedsize_stack(core_->options().fiber_stack_bytes),
          [this, f, base = r.base, bytes = r.bytes] {
            try {
              ServiceContext<SimTransport> ctx(*clients_[f], base, bytes, f, stop_);
              body_(ctx);
            } catch (...) {
              if (!first_failure_) {
                first_failure_ = std::current_exception();
                first_fiber_ = f;
              }
              ++failed_;
            }
          });
  }
  void join_all() {
    for (auto& f : fibers_)
      if (f.joinable()) f.join();
  }

  std::shared_ptr<Core> core_;
  NodeId node_;
  ServiceBody<SimTransport> body_;
  std::vector<std::unique_ptr<Client<SimTransport>>> clients_;
  std::vector<boost::fibers::fiber> fibers_;
  std::atomic<bool> stop_{false};
  uint64_t token_ = 0;
  bool launched_ = false, joined_ = false, stop_requested_ = false;
  std::exception_ptr first_failure_;
  unsigned first_fiber_ = 0, failed_ = 0;
};

}  // namespace dmrt::sim
