// SimTransport: the shm pool's memory, driven by a deterministic discrete-event simulator in
// virtual time (dmrt/policies/sim/core.h). Index code instantiated with it runs unchanged.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "dmrt/policies/shm/pool.h"
#include "dmrt/policies/sim/core.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/messaging.h"
#include "dmrt/runtime/transport.h"

namespace dmrt::sim {

// One simulated client's handle. Inside a simulation run (Cluster::run, or a thread with the
// Cluster's hooks) every verb is timed; outside one, verbs apply inline and untimed, like shm,
// which is how data can be loaded before a measured run.
class Endpoint {
 public:
  Endpoint(std::shared_ptr<Core> core, NodeId home, uint32_t client_id)
      : core_(std::move(core)), home_(home), client_(client_id) {}
  // The endpoint of a memory-node service fiber homed on `node` (sim::ServiceHost makes them):
  // its verbs to its own node are local memory accesses charged as that node's CPU time, not NIC
  // traversals; a message it takes costs service_msg_ns; its pause() sleeps until the node's
  // memory changes (Options::service_idle_ns).
  static Endpoint service(std::shared_ptr<Core> core, NodeId node, uint32_t client_id) {
    Endpoint e(std::move(core), node, client_id);
    e.service_ = true;
    return e;
  }

  // Posts every verb at the current virtual time, suspends the fiber until the last completion
  // (plus cpu_ns), and applies each verb to memory when it reaches its target.
  void execute(std::span<Batch> batches, Counters& counters) {
    core_->execute(home_, batches, counters, service_);
  }
  // Advances this fiber's virtual clock by poll_ns and lets earlier fibers run.
  void pause() {
    if (service_)
      core_->service_pause(home_);
    else
      core_->pause();
  }
  uint64_t now_ns() const { return core_->now_ns(); }
  // Charges `ns` of client CPU time (work between verbs the model should account for); on a
  // service endpoint, of its node's CPU.
  void charge_cpu(uint64_t ns) {
    if (service_)
      core_->charge_service_cpu(home_, ns);
    else
      core_->charge_cpu(ns);
  }

  // A message costs one NIC traversal like a WRITE (and its acknowledgement); it is pushed into
  // the destination ring when it arrives. Receiving polls the home node's ring at no cost (the
  // caller's pause() between polls advances time); a service pays service_msg_ns per message.
  bool try_send(NodeId node, uint32_t mailbox, const MessageHeader& h,
                std::span<const std::byte> payload) {
    return core_->send(home_, node, mailbox, h, payload, service_);
  }
  bool try_receive(uint32_t mailbox, Message& out) {
    bool got = core_->receive(home_, mailbox, out);
    if (got && service_) core_->service_received(home_);
    return got;
  }
  bool is_service() const { return service_; }

  NodeId home_node() const { return home_; }
  uint32_t client_id() const { return client_; }
  size_t node_count() const { return core_->pool().node_count(); }
  NodeRole role(NodeId n) const { return core_->pool().region(n).role; }
  uint64_t region_bytes(NodeId n) const { return core_->pool().region(n).bytes; }
  const MailboxGeometry& mailbox_geometry() const { return core_->pool().config().mailbox; }
  bool native_masked_cas() const { return core_->options().native_masked_cas; }

  shm::Pool& pool() const { return core_->pool(); }
  Core& core() const { return *core_; }
  const std::shared_ptr<Core>& core_ptr() const { return core_; }
  // Local address of a remote one, bounds-checked (untimed access, for services and tests).
  std::byte* translate(GlobalAddress a, uint64_t len) const { return core_->translate(a, len); }

 private:
  std::shared_ptr<Core> core_;
  NodeId home_;
  uint32_t client_;
  bool service_ = false;
};

struct Transport {
  static constexpr std::string_view kName = "sim";
  // Every verb is applied at one instant of virtual time: each line is read and written whole.
  static constexpr bool kLineAtomic = true;
  // Services are fibers in the simulation, on the memory node's cores
  // (dmrt/policies/sim/hosting.h).
  static constexpr bool kHostsServices = true;
  // Its clock is virtual: it moves only with the verbs clients post
  // (dmrt/runtime/transport.h).
  static constexpr bool kVirtualTime = true;
  using Endpoint = sim::Endpoint;
};

static_assert(dmrt::Transport<Transport>);

}  // namespace dmrt::sim

namespace dmrt {
using SimTransport = sim::Transport;
// Instantiated once, in libdmrt (dmrt/policies/sim/client.cpp).
extern template class Client<SimTransport>;
}  // namespace dmrt
