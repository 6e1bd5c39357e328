// Client: the per-fiber facade indexes call for verbs, batches, messages and allocation.
#pragma once

#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "dmrt/runtime/allocator.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/liveness.h"
#include "dmrt/runtime/messaging.h"
#include "dmrt/runtime/stats.h"
#include "dmrt/runtime/transport.h"
#include "dmrt/runtime/verbs.h"

namespace dmrt {

struct ClientOptions {
  AllocatorOptions allocator;
  // A call() with no reply after this long throws TransportError (transport clock; 0 = forever).
  uint64_t call_timeout_ns = 30'000'000'000ull;
};

// Every method suspends only the calling fiber until its verbs complete, and counts every verb,
// byte and round trip, by target node and by node role. One Client per fiber; not shared.
template <Transport T>
class Client {
 public:
  using TransportType = T;
  using EndpointType = typename T::Endpoint;

  explicit Client(EndpointType ep, ClientOptions opts = {})
      : ep_(std::move(ep)),
        opts_(opts),
        allocator_(memory_nodes_of(ep_), opts.allocator, ep_.client_id()) {
    counters_.by_node.resize(ep_.node_count());
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // --- single verbs: each is one round trip -------------------------------------------------
  // `hint`: where a port to non-coherent memory flushes (FlushHint, dmrt/runtime/verbs.h).
  void read(GlobalAddress src, void* dst, uint32_t len, FlushHint hint = FlushHint::kNone) {
    Batch b;
    b.read(src, dst, len).hint(hint);
    run(b);
  }
  void write(GlobalAddress dst, const void* src, uint32_t len, FlushHint hint = FlushHint::kNone) {
    Batch b;
    b.write(dst, src, len).hint(hint);
    run(b);
  }
  // A WRITE whose last (or first) word releases a lock (Batch::release).
  void release(GlobalAddress dst, const void* src, uint32_t len, LockWord at = LockWord::kLast,
               FlushHint hint = FlushHint::kNone) {
    Batch b;
    b.release(dst, src, len, at).hint(hint);
    run(b);
  }
  template <class V>
  V read_value(GlobalAddress src, FlushHint hint = FlushHint::kNone) {
    V v;
    read(src, &v, sizeof(V), hint);
    return v;
  }
  // Returns the value found before the CAS: success iff it equals `expected`.
  uint64_t cas(GlobalAddress word, uint64_t expected, uint64_t desired) {
    uint64_t old = 0;
    Batch b;
    b.cas(word, expected, desired, &old);
    run(b);
    return old;
  }
  uint64_t masked_cas(GlobalAddress word, uint64_t compare, uint64_t compare_mask, uint64_t swap,
                      uint64_t swap_mask) {
    uint64_t old = 0;
    Batch b;
    b.masked_cas(word, compare, compare_mask, swap, swap_mask, &old);
    run(b);
    return old;
  }
  uint64_t faa(GlobalAddress word, uint64_t add) {
    uint64_t old = 0;
    Batch b;
    b.faa(word, add, &old);
    run(b);
    return old;
  }

  // --- batches ---------------------------------------------------------------------------------
  // One batch: one doorbell, one round trip.
  void run(Batch& b) { run(std::span<Batch>(&b, 1)); }
  // Batches to different nodes in flight together: one round trip in all. A batch to this
  // client's own node that moves data only is a local access instead (local_access()).
  void run(std::span<Batch> batches) {
    bool any = false, local = false;
    bool role_touched[2] = {false, false};
    const NodeId home = ep_.home_node();
    for (size_t i = 0; i < batches.size(); ++i) {
      Batch& b = batches[i];
      if (b.empty()) continue;
      NodeId n = b.node();
      if (n >= counters_.by_node.size())
        throw AddressError("verb to node " + std::to_string(n) + ", but the cluster has " +
                           std::to_string(counters_.by_node.size()) + " nodes");
      NodeRole r = ep_.role(n);
      VerbCounters& node = counters_.by_node[n];
      VerbCounters& role = counters_.role(r);
      for (const Verb& v : b.verbs()) {
        size_t k = static_cast<size_t>(v.kind);
        ++counters_.total.verbs[k];
        ++node.verbs[k];
        ++role.verbs[k];
        uint64_t rd = v.kind == VerbKind::kRead ? v.length : (v.is_atomic() ? 8 : 0);
        uint64_t wr = v.kind == VerbKind::kWrite ? v.length : (v.is_atomic() ? 8 : 0);
        counters_.total.bytes_read += rd;
        node.bytes_read += rd;
        role.bytes_read += rd;
        counters_.total.bytes_written += wr;
        node.bytes_written += wr;
        role.bytes_written += wr;
      }
      b.set_local(local_access(batches, i, home));
      if (b.local()) {
        ++counters_.total.local_accesses;
        ++node.local_accesses;
        ++role.local_accesses;
        local = true;
        continue;
      }
      ++node.round_trips;
      role_touched[static_cast<size_t>(r)] = true;
      any = true;
    }
    if (!any && !local) return;
    if (any) {
      progress_.set_round_trips(++counters_.total.round_trips);
      for (size_t r = 0; r < 2; ++r)
        if (role_touched[r]) ++counters_.by_role[r].round_trips;
    }
    ep_.execute(batches, counters_);
  }

  // --- allocation ------------------------------------------------------------------------------
  GlobalAddress alloc(uint64_t bytes, uint64_t align = 64) {
    return allocator_.allocate(*this, bytes, align);
  }
  GlobalAddress alloc_on(NodeId node, uint64_t bytes, uint64_t align = 64) {
    GlobalAddress a = allocator_.allocate_on(*this, node, bytes, align);
    if (!a)
      throw PoolExhausted("memory node " + std::to_string(node) + " has no " +
                          std::to_string(bytes) + " free bytes left");
    return a;
  }
  void free(GlobalAddress a, uint64_t bytes) { allocator_.free(a, bytes); }
  // Device memory of `node` (on-chip memory of its NIC; dmrt/runtime/address.h): `bytes` rounded up
  // to 64, 64-byte aligned, zero when handed out. For an index's creation (a lock table): it is
  // small, and it is never freed or reused. One round trip: FAA on the node's device bump word
  // and a READ of its size, in one batch. Throws PoolExhausted when it does not fit.
  GlobalAddress alloc_device_memory(NodeId node, uint64_t bytes) {
    if (node >= node_count())
      throw AddressError("device memory of node " + std::to_string(node) +
                         ", but the cluster has " + std::to_string(node_count()) + " nodes");
    const uint64_t size = (bytes + 63) & ~uint64_t{63};
    uint64_t taken = 0, total = 0;
    Batch b;
    b.faa(layout::device_bump_word(node), size, &taken)
        .read(layout::device_memory_bytes_word(node), &total, 8);
    run(b);
    if (taken + size > total || taken + size < size)
      throw PoolExhausted("node " + std::to_string(node) + " has " + std::to_string(total) +
                          " bytes of device memory" +
                          (total ? ", " + std::to_string(std::min(taken, total)) + " taken" : "") +
                          ": " + std::to_string(size) +
                          " more do not fit (cluster config: device_memory)");
    return GlobalAddress::device(node, taken);
  }
  RemoteAllocator& allocator() { return allocator_; }

  // --- two-sided messaging -----------------------------------------------------------------------
  // One-way message; waits (pausing) while the destination mailbox is full.
  void send(NodeId node, uint32_t mailbox, uint32_t tag, std::span<const std::byte> payload,
            uint64_t request_id = 0, uint32_t reply_mailbox = 0) {
    // A reply goes where a received message says: check it names a real node and mailbox.
    if (node >= ep_.node_count() || mailbox >= ep_.mailbox_geometry().mailboxes)
      throw ConfigError("message to node " + std::to_string(node) + " mailbox " +
                        std::to_string(mailbox) + ": the cluster has " +
                        std::to_string(ep_.node_count()) + " nodes of " +
                        std::to_string(ep_.mailbox_geometry().mailboxes) + " mailboxes");
    MessageHeader h{ep_.home_node(), reply_mailbox, tag, request_id};
    count_message(node, payload.size());
    if (ep_.try_send(node, mailbox, h, payload)) return;  // the usual case: no clock read
    const uint64_t start = coarse_now_ns();
    while (!ep_.try_send(node, mailbox, h, payload)) {
      check_timeout(start, [&] {
        return "mailbox " + std::to_string(mailbox) + " of node " + std::to_string(node) +
               " stayed full";
      });
      pause();
    }
  }
  // Request/response: sends with this client's reply mailbox and waits for the matching answer.
  Message call(NodeId node, uint32_t mailbox, uint32_t tag, std::span<const std::byte> request) {
    uint64_t id = ++next_request_;
    send(node, mailbox, tag, request, id, reply_mailbox());
    Message m;
    const uint64_t start = coarse_now_ns();
    for (;;) {
      if (ep_.try_receive(reply_mailbox(), m)) {
        if (m.request_id == id) return m;
        continue;  // a late answer to an earlier, timed-out call
      }
      check_timeout(start, [&] {
        return "no reply from node " + std::to_string(node) + " (tag " + std::to_string(tag) + ")";
      });
      pause();
    }
  }
  // Answers a request received on a service mailbox.
  void reply(const Message& request, uint32_t tag, std::span<const std::byte> payload) {
    send(request.from_node, request.reply_mailbox, tag, payload, request.request_id);
  }
  bool try_receive(uint32_t mailbox, Message& out) { return ep_.try_receive(mailbox, out); }
  // Waits for a message on `mailbox` of this client's node.
  Message receive(uint32_t mailbox) {
    Message m;
    while (!ep_.try_receive(mailbox, m)) pause();
    return m;
  }
  // Mailbox on this client's home node where its replies land (0 is the node's service inbox).
  // Each client needs its own: a shared reply box would let one client consume another's answer.
  uint32_t reply_mailbox() const {
    uint32_t boxes = ep_.mailbox_geometry().mailboxes;
    if (ep_.client_id() + 1 >= boxes)
      throw ConfigError("client " + std::to_string(ep_.client_id()) +
                        " has no reply mailbox: nodes have " + std::to_string(boxes) +
                        " mailboxes (raise mailbox.mailboxes in the cluster config)");
    return 1 + ep_.client_id();
  }

  // --- scheduling, identity, stats
  // ----------------------------------------------------------------
  void pause() {
    progress_.count_pause();
    ep_.pause();
  }
  // Round trips and pauses so far, for a watchdog on another thread (ClientProgress).
  const ClientProgress& progress() const { return progress_; }
  uint64_t now_ns() { return ep_.now_ns(); }
  // The transport clock at a coarser grain, to start measuring a span of milliseconds on a hot
  // path: the endpoint's coarse clock where it has one (shm: CLOCK_MONOTONIC_COARSE, a sixth of
  // the cost of now_ns() on a KVM guest), else now_ns(). Never ahead of now_ns() read after it,
  // so now_ns() minus it is never short of the time that passed; usually behind by less than
  // coarse_tick_ns() (0 without a coarse clock), more while the kernel's tick is late.
  uint64_t coarse_now_ns() {
    if constexpr (requires { ep_.coarse_now_ns(); })
      return ep_.coarse_now_ns();
    else
      return ep_.now_ns();
  }
  uint64_t coarse_tick_ns() const {
    if constexpr (requires { ep_.coarse_tick_ns(); })
      return ep_.coarse_tick_ns();
    else
      return 0;
  }
  NodeId home_node() const { return ep_.home_node(); }
  uint32_t id() const { return ep_.client_id(); }
  size_t node_count() const { return ep_.node_count(); }
  NodeRole role(NodeId n) const { return ep_.role(n); }
  uint64_t region_bytes(NodeId n) const { return ep_.region_bytes(n); }
  bool native_masked_cas() const { return ep_.native_masked_cas(); }
  // Whether this client's READs and WRITEs are line-atomic (dmrt/runtime/transport.h): the policy's
  // trait, narrowed by the endpoint where it depends on the device.
  bool line_atomic() const {
    if constexpr (!dmrt::line_atomic<T>)
      return false;
    else if constexpr (requires { ep_.line_atomic(); })
      return ep_.line_atomic();
    else
      return true;
  }
  std::vector<NodeId> memory_nodes() const { return memory_nodes_of(ep_); }

  const Counters& counters() const { return counters_; }
  Counters& counters() { return counters_; }
  EndpointType& endpoint() { return ep_; }

  // Who tells this client that a lock holder's process died (dmrt/runtime/liveness.h); none by
  // default: then no holder is ever taken for dead, and a lock waits for its holder forever.
  void set_liveness(const Liveness* l) { liveness_ = l; }
  bool holder_dead(uint32_t client) const { return liveness_ && liveness_->fenced_dead(client); }
  // This client's process tag for narrow lock words (Liveness::process_tag); 0 without a
  // Liveness, and a tag of 0 is never taken for dead.
  uint8_t process_tag() const { return liveness_ ? liveness_->process_tag(id()) : 0; }
  bool tag_dead(uint8_t tag) const { return liveness_ && tag && liveness_->tag_dead(tag); }

 private:
  static std::vector<NodeId> memory_nodes_of(const EndpointType& ep) {
    std::vector<NodeId> out;
    for (size_t n = 0; n < ep.node_count(); ++n)
      if (ep.role(static_cast<NodeId>(n)) == NodeRole::kMemory)
        out.push_back(static_cast<NodeId>(n));
    return out;
  }
  void count_message(NodeId node, size_t bytes) {
    for (VerbCounters* c :
         {&counters_.total, &counters_.by_node[node], &counters_.role(ep_.role(node))}) {
      ++c->messages;
      c->message_bytes += bytes;
    }
  }
  // Throws once call_timeout_ns have passed since `start` (a coarse_now_ns() reading). Called on
  // every poll of a wait: the coarse clock, and `what()` (the error's text) only when it throws.
  template <class What>
  void check_timeout(uint64_t start, What&& what) {
    if (opts_.call_timeout_ns && coarse_now_ns() - start > opts_.call_timeout_ns)
      throw TransportError(what() + " after " + std::to_string(opts_.call_timeout_ns / 1000000) +
                           " ms");
  }

  EndpointType ep_;
  ClientOptions opts_;
  Counters counters_;
  ClientProgress progress_;
  RemoteAllocator allocator_;
  uint64_t next_request_ = 0;
  const Liveness* liveness_ = nullptr;
};

}  // namespace dmrt
