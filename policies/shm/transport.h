// ShmTransport: one-sided verbs as loads, stores and atomic_ref atomics on a shared-memory Pool.
#pragma once

#include <boost/fiber/operations.hpp>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>

#include "policies/shm/pool.h"
#include "runtime/client.h"
#include "runtime/error.h"
#include "runtime/layout.h"
#include "runtime/local_memory.h"
#include "runtime/messaging.h"
#include "runtime/scheduler.h"
#include "runtime/transport.h"

namespace dmrt::shm {

// Verbs complete inline: execute() performs them in order and returns. This is CXL's behaviour,
// and also what a test wants: real concurrency between threads and processes, no network.
class Endpoint {
 public:
  Endpoint(std::shared_ptr<Pool> pool, NodeId home, uint32_t client_id)
      : pool_(std::move(pool)), home_(home), client_(client_id) {}

  void execute(std::span<Batch> batches, Counters& counters) {
    if (uint8_t hooks = pool_->round_trip_hooks(); hooks != 0) [[unlikely]] {
      execute_hooked(batches, counters, hooks);
      return;
    }
    for (Batch& b : batches)
      for (const Verb& v : b.verbs()) perform(v, counters);
  }

  void pause() {
    boost::this_fiber::yield();
    // A lone fiber spinning on a word another thread holds must let that thread run.
    if ((++pauses_ & 63) == 0) std::this_thread::yield();
  }
  uint64_t now_ns() const {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }

  bool try_send(NodeId node, uint32_t mailbox, const MessageHeader& h,
                std::span<const std::byte> payload) {
    return ring(node, mailbox).try_push(h, payload);
  }
  bool try_receive(uint32_t mailbox, Message& out) { return ring(home_, mailbox).try_pop(out); }

  NodeId home_node() const { return home_; }
  uint32_t client_id() const { return client_; }
  size_t node_count() const { return pool_->node_count(); }
  NodeRole role(NodeId n) const { return pool_->region(n).role; }
  uint64_t region_bytes(NodeId n) const { return pool_->region(n).bytes; }
  const MailboxGeometry& mailbox_geometry() const { return pool_->config().mailbox; }
  bool native_masked_cas() const { return false; }
  Pool& pool() const { return *pool_; }

  // Local address of a remote one, bounds-checked: for memory-node services and tests.
  std::byte* translate(GlobalAddress a, uint64_t len) const {
    if (a.node() >= pool_->node_count())
      throw AddressError("address " + a.to_string() + " names node " + std::to_string(a.node()) +
                         "; the cluster has " + std::to_string(pool_->node_count()) + " nodes");
    const Region& r = pool_->region_of(a);
    const uint64_t off = a.region_offset();
    if (off + len > r.bytes || off + len < off)
      throw AddressError("verb on " + a.to_string() + " of " + std::to_string(len) +
                         " bytes runs past the node's " +
                         (a.in_device_memory() ? "device memory" : "region") + " of " +
                         std::to_string(r.bytes) + " bytes");
    return r.base + off;
  }

 private:
  void perform(const Verb& v, Counters& counters) {
    uint64_t attempts = local::apply(translate(v.remote, v.length), v);
    if (v.kind != VerbKind::kMaskedCas) return;
    for (VerbCounters* c : {&counters.total, &counters.by_node[v.remote.node()],
                            &counters.role(role(v.remote.node()))}) {
      ++c->emulated_masked_cas;
      if (attempts > 1) c->emulation_retries += attempts - 1;
    }
  }

  // The round trip under the pool's test hooks (shm::Pool::round_trip_hooks).
  void execute_hooked(std::span<Batch> batches, Counters& counters, uint8_t hooks) {
    for (Batch& b : batches)
      for (const Verb& v : b.verbs()) {
#ifdef DMRT_FAULT_INJECTION
        if ((hooks & Pool::kTornReads) && v.kind == VerbKind::kRead && read_torn(v)) continue;
#endif
        perform(v, counters);
      }
    if (hooks & Pool::kYieldPerRoundTrip) boost::this_fiber::yield();
  }

#ifdef DMRT_FAULT_INJECTION
  // Performs a READ in two pieces split at a word boundary inside it, yielding between them;
  // false (nothing done) when no boundary falls inside it. The split and which piece goes first
  // come from a splitmix64 sequence per client: deterministic for a given schedule.
  bool read_torn(const Verb& v) {
    std::byte* src = translate(v.remote, v.length);
    auto start = reinterpret_cast<uintptr_t>(src);
    uintptr_t first = (start | 7) + 1, end = start + v.length;  // first boundary after start
    if (first >= end) return false;
    uint64_t r = (uint64_t{client_} << 32) + ++tears_;
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
    r ^= r >> 31;
    size_t cut = first - start + 8 * ((r >> 1) % ((end - 1 - first) / 8 + 1));
    auto* dst = static_cast<std::byte*>(v.local);
    if (r & 1) {
      local::read(src, dst, cut);
      boost::this_fiber::yield();
      local::read(src + cut, dst + cut, v.length - cut);
    } else {
      local::read(src + cut, dst + cut, v.length - cut);
      boost::this_fiber::yield();
      local::read(src, dst, cut);
    }
    return true;
  }
#endif

  MailboxRing ring(NodeId node, uint32_t mailbox) const {
    const MailboxGeometry& g = pool_->config().mailbox;
    if (mailbox >= g.mailboxes)
      throw AddressError("mailbox " + std::to_string(mailbox) + " does not exist (nodes have " +
                         std::to_string(g.mailboxes) + ")");
    return MailboxRing(translate({node, layout::mailbox_offset(g, mailbox)}, g.bytes_per_mailbox()),
                       g);
  }

  std::shared_ptr<Pool> pool_;
  NodeId home_;
  uint32_t client_;
  uint64_t pauses_ = 0;
  uint64_t tears_ = 0;  // torn READs so far (shm::Pool::set_torn_reads)
};

struct Transport {
  static constexpr std::string_view kName = "shm";
  using Endpoint = shm::Endpoint;
};

static_assert(dmrt::Transport<Transport>);

}  // namespace dmrt::shm

namespace dmrt {
using ShmTransport = shm::Transport;
// Instantiated once, in libdmrt (policies/shm/client.cpp).
extern template class Client<ShmTransport>;
}  // namespace dmrt
