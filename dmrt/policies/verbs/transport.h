// VerbsTransport: one-sided verbs over RDMA RC queue pairs (rdma-core), completing through the
// calling thread's CQ poller fiber. See dmrt/policies/verbs/cluster.h for set-up.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "dmrt/policies/verbs/cluster.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/messaging.h"
#include "dmrt/runtime/transport.h"

namespace dmrt::verbs {

// A client's handle: cheap to copy; the Cluster must outlive it. Methods that move data must run
// on an OS thread bound to the cluster (Scheduler with cluster.thread_hooks(), or a
// Cluster::ThreadBinding).
class Endpoint {
 public:
  Endpoint(Cluster* cluster, NodeId home, uint32_t client_id)
      : cluster_(cluster), home_(home), client_(client_id) {}

  // Each batch becomes one chained work-request list, posted with one doorbell, only its last
  // verb signaled; batches to different nodes are in flight together. Suspends only the calling
  // fiber. Masked CAS is a counted READ + CAS loop (never a plain CAS) unless native.
  void execute(std::span<Batch> batches, Counters& counters);
  void pause();
  uint64_t now_ns() const;

  // Messaging over one-sided verbs into the destination's MailboxRing (dmrt/runtime/messaging.h):
  // READ tail, READ slot sequence, CAS tail, then WRITE slot body + sequence in one batch.
  bool try_send(NodeId node, uint32_t mailbox, const MessageHeader& header,
                std::span<const std::byte> payload);
  // Pops from this node's own (local, registered) region.
  bool try_receive(uint32_t mailbox, Message& out);

  NodeId home_node() const { return home_; }
  uint32_t client_id() const { return client_; }
  size_t node_count() const { return cluster_->config().size(); }
  NodeRole role(NodeId n) const { return cluster_->config().nodes.at(n).role; }
  uint64_t region_bytes(NodeId n) const { return cluster_->config().nodes.at(n).region_bytes; }
  const MailboxGeometry& mailbox_geometry() const { return cluster_->config().mailbox; }
  bool native_masked_cas() const { return cluster_->native_masked_cas(); }
  bool line_atomic() const { return cluster_->line_atomic(); }
  Cluster& cluster() const { return *cluster_; }

 private:
  Cluster* cluster_;
  NodeId home_;
  uint32_t client_;
  uint64_t pauses_ = 0;
};

struct Transport {
  static constexpr std::string_view kName = "verbs";
  // The papers' assumption, not a promise of the InfiniBand specification: a NIC reads and
  // writes host memory in whole 64-byte PCIe cache lines. A software device (rxe, siw) does not:
  // Endpoint::line_atomic() says so at run time. A local access (memcpy from the own node's
  // region) is not covered either; the trees keep their leaves on memory nodes.
  static constexpr bool kLineAtomic = true;
  using Endpoint = verbs::Endpoint;
};

static_assert(dmrt::Transport<Transport>);

}  // namespace dmrt::verbs

namespace dmrt {
using VerbsTransport = verbs::Transport;
// Instantiated once, in libdmrt (dmrt/policies/verbs/client.cpp).
extern template class Client<VerbsTransport>;
}  // namespace dmrt
