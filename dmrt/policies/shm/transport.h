// ShmTransport: one-sided verbs as loads, stores and atomic_ref atomics on a shared-memory Pool.
#pragma once

#include <algorithm>
#include <boost/fiber/operations.hpp>
#include <chrono>
#include <ctime>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "dmrt/policies/shm/idle.h"
#include "dmrt/policies/shm/pool.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/messaging.h"
#include "dmrt/runtime/scheduler.h"
#include "dmrt/runtime/transport.h"

namespace dmrt::shm {

// Verbs complete inline: execute() performs them in order and returns. This is CXL's behaviour,
// and also what a test wants: real concurrency between threads and processes, no network.
// Two pool settings change when the fiber gives up the CPU, never what the verbs do: prefetch
// execution (dmrt/policies/shm/execution.h) and the far-memory model
// (dmrt/policies/shm/far_memory.h).
class Endpoint {
 public:
  Endpoint(std::shared_ptr<Pool> pool, NodeId home, uint32_t client_id)
      : pool_(std::move(pool)),
        bells_(pool_->region(0).base + layout::kIdleBellOffset),
        home_bell_(bell(IdleBell::of_node(home, pool_->region(home).role))),
        regions_(&pool_->region(0)),
        device_(&pool_->device_region(0)),
        nodes_(pool_->node_count()),
        home_(home),
        client_(client_id),
        polling_(pool_->polling_waits()) {}
  // A thread whose last fiber ends while its thread is armed must not leave the bell counting a
  // sleeper (every send would then make a futex call for nobody).
  ~Endpoint() { idle_thread().progress(); }
  Endpoint(Endpoint&&) = default;
  Endpoint& operator=(Endpoint&&) = default;
  Endpoint(const Endpoint&) = default;
  Endpoint& operator=(const Endpoint&) = default;

  void execute(std::span<Batch> batches, Counters& counters) {
    idle_thread().progress();
    if (uint8_t hooks = pool_->round_trip_hooks(); hooks != 0) {
      execute_hooked(batches, counters, hooks);
      return;
    }
    for (Batch& b : batches)
      for (const Verb& v : b.verbs()) perform(v, counters);
  }

  // A fiber that waits: the next fiber of the thread runs. When every fiber of the thread has
  // only paused for a while (no verb, no message), the thread sleeps until a message is sent
  // anywhere in the pool or 100 us pass (dmrt/policies/shm/idle.h), so that idle servers and
  // clients waiting for answers leave the cores to the threads that have work. On a pool that may
  // span hosts (Pool::polling_waits) it sleeps 1 to 100 us between looks instead: no futex.
  void pause() {
    IdleThread& t = idle_thread();
    if (polling_)
      t.pause_polling();
    else
      t.pause(home_bell_, bell(IdleBell::kAnyBell));
    yield();
    // A lone fiber spinning on a word another thread holds must let that thread run. Counted
    // per thread: counted per fiber, the idle fibers of a thread reach their 64th pause in the
    // same round and give the core away back to back.
    if ((++t.pauses & 63) == 0) std::this_thread::yield();
  }
  uint64_t now_ns() const {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }

  // CLOCK_MONOTONIC_COARSE, the clock steady_clock reads at its last tick (Client::coarse_now_ns).
  uint64_t coarse_now_ns() const {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(t.tv_nsec);
  }
  static uint64_t coarse_tick_ns() {
    static const uint64_t tick = [] {
      timespec r{};
      clock_getres(CLOCK_MONOTONIC_COARSE, &r);
      return static_cast<uint64_t>(r.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(r.tv_nsec);
    }();
    return tick;
  }

  bool try_send(NodeId node, uint32_t mailbox, const MessageHeader& h,
                std::span<const std::byte> payload) {
    if (!ring(node, mailbox).try_push(h, payload)) return false;
    idle_thread().progress();
    if (polling_) return true;  // its receiver polls: no bell, no futex across hosts
    bell(IdleBell::of_node(node, role(node))).ring();
    bell(IdleBell::kAnyBell).ring(true);
    return true;
  }
  bool try_receive(uint32_t mailbox, Message& out) {
    if (!ring(home_, mailbox).try_pop(out)) return false;
    idle_thread().progress();
    return true;
  }

  NodeId home_node() const { return home_; }
  uint32_t client_id() const { return client_; }
  size_t node_count() const { return pool_->node_count(); }
  NodeRole role(NodeId n) const { return regions_[n].role; }
  uint64_t region_bytes(NodeId n) const { return regions_[n].bytes; }
  const MailboxGeometry& mailbox_geometry() const { return pool_->config().mailbox; }
  bool native_masked_cas() const { return false; }
  Pool& pool() const { return *pool_; }
  // The time the far-memory model gave this endpoint's last round trip (the transport clock):
  // it returned no earlier. 0 when that round trip reached no modelled node.
  uint64_t last_due_ns() const { return last_due_ns_; }
  // Whether this endpoint let other fibers run (a pause, a prefetching or modelled round trip)
  // since the last call; clears it. The bench yields between operations only when the operation
  // did not already (bench/driver/transports.h).
  bool take_yielded() { return std::exchange(yielded_, false); }

  // Local address of a remote one, bounds-checked: for memory-node services and tests.
  std::byte* translate(GlobalAddress a, uint64_t len) const {
    if (std::byte* p = try_translate(a, len)) [[likely]]
      return p;
    refuse(a, len);
  }
  // The same, or null where translate() throws.
  std::byte* try_translate(GlobalAddress a, uint64_t len) const {
    if (a.node() >= nodes_) return nullptr;
    const Region& r = a.in_device_memory() ? device_[a.node()] : regions_[a.node()];
    const uint64_t off = a.region_offset();
    if (off + len > r.bytes || off + len < off) return nullptr;
    return r.base + off;
  }

 private:
  [[noreturn, gnu::cold, gnu::noinline]] void refuse(GlobalAddress a, uint64_t len) const {
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
    throw AddressError("address " + a.to_string() + " is out of bounds");
  }

  void perform(const Verb& v, Counters& counters) {
    std::byte* p = translate(v.remote, v.length);
    if (v.kind == VerbKind::kRead) {  // most verbs: no call through apply's switch
      local::read(p, v.local, v.length);
      return;
    }
    uint64_t attempts = local::apply(p, v);
    if (v.kind != VerbKind::kMaskedCas) return;
    for (VerbCounters* c : {&counters.total, &counters.by_node[v.remote.node()],
                            &counters.role(role(v.remote.node()))}) {
      ++c->emulated_masked_cas;
      if (attempts > 1) c->emulation_retries += attempts - 1;
    }
  }

  // The round trip under the pool's hooks (shm::Pool::round_trip_hooks): the far-memory model
  // fixes when it may complete; prefetch execution starts fetching its lines and lets the other
  // fibers of the thread run meanwhile; the verbs take effect when the fiber runs again, at or
  // after that time, in order, exactly as inline.
  void execute_hooked(std::span<Batch> batches, Counters& counters, uint8_t hooks) {
#ifdef DMRT_FAULT_INJECTION
    if (hooks & Pool::kJitter)
      for (uint64_t n = next_random() % (pool_->round_trip_jitter() + 1); n > 0; --n) yield();
#endif
    uint64_t due = 0;
    if (hooks & Pool::kFarMemory) due = post_far(batches);
    last_due_ns_ = due;
    if (hooks & Pool::kPrefetch) {
      unsigned budget = kPrefetchLinesPerRoundTrip;
      for (const Batch& b : batches)
        for (const Verb& v : b.verbs())
          if (const std::byte* p = try_translate(v.remote, v.length))
            prefetch_range(p, v.length, v.kind != VerbKind::kRead, budget);
      yield();
    }
    while (due != 0 && now_ns() < due) {
      idle_thread().progress();  // waiting for the model, not idle: the thread must not sleep
      yield();
    }
    if (hooks & Pool::kCoherence) {
      perform_coherent(batches, counters);
    } else {
      for (Batch& b : batches)
        for (const Verb& v : b.verbs()) {
#ifdef DMRT_FAULT_INJECTION
          if ((hooks & Pool::kTornReads) && v.kind == VerbKind::kRead && read_torn(v)) continue;
#endif
          perform(v, counters);
        }
    }
    if (hooks & Pool::kYieldPerRoundTrip) yield();
  }

  // The verbs as a port to non-coherent shared memory performs them
  // (dmrt/policies/shm/coherence.h): the lines every READ and atomic of the round trip will load
  // are invalidated first, behind one fence; each WRITE and atomic is written back and fenced
  // before the next verb, so that a batch's later store (an unlock after the leaf it releases)
  // never reaches memory first. Verbs on the client's own node are local memory and need none of
  // it.
  void perform_coherent(std::span<Batch> batches, Counters& counters) {
    const FlushInstructions& f = pool_->flush_instructions();
    uint64_t invalidated = 0, written_back = 0;
    for (const Batch& b : batches) {
      if (b.node() == home_) continue;
      for (const Verb& v : b.verbs())
        if (v.kind != VerbKind::kWrite)
          if (const std::byte* p = try_translate(v.remote, v.length))
            invalidated += invalidate_lines(p, v.length, f);
    }
    if (invalidated) load_fence();
    for (Batch& b : batches) {
      const bool far = b.node() != home_;
      for (const Verb& v : b.verbs()) {
        perform(v, counters);
        if (!far || v.kind == VerbKind::kRead) continue;
        written_back += write_back_lines(translate(v.remote, v.length), v.length, f);
        store_fence();
      }
    }
    pool_->coherence_stats().add(client_, invalidated, written_back);
  }

  void yield() {
    yielded_ = true;
    boost::this_fiber::yield();
  }

  // Reserves the modelled links of the batches that leave this node; returns when the round
  // trip may complete (0: none of them reaches a modelled node). A node's own memory, and so a
  // local access, costs nothing more: it is not far.
  uint64_t post_far(std::span<const Batch> batches) {
    FarMemory& far = *pool_->far_memory();
    uint64_t due = 0, now = 0;
    for (const Batch& b : batches) {
      if (b.empty() || b.node() == home_ || !far.models(b.node())) continue;
      if (now == 0) now = now_ns();
      due = std::max(due, far.post(b.node(), now, FarMemory::link_bytes(b)));
    }
    return due;
  }

#ifdef DMRT_FAULT_INJECTION
  // A splitmix64 sequence per client: deterministic for a given schedule.
  uint64_t next_random() {
    uint64_t r = (uint64_t{client_} << 32) + ++draws_;
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
    return r ^ (r >> 31);
  }
  // Performs a READ in two pieces split at a word boundary inside it, yielding between them;
  // false (nothing done) when no boundary falls inside it. The split and which piece goes first
  // come from next_random().
  bool read_torn(const Verb& v) {
    std::byte* src = translate(v.remote, v.length);
    auto start = reinterpret_cast<uintptr_t>(src);
    uintptr_t first = (start | 7) + 1, end = start + v.length;  // first boundary after start
    if (first >= end) return false;
    const uint64_t r = next_random();
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

  IdleBell bell(unsigned i) const {
    return IdleBell(bells_ + IdleBell::kStride * i);
  }

  std::shared_ptr<Pool> pool_;
  std::byte* bells_;    // node 0's IdleBell words (layout::kIdleBellOffset)
  IdleBell home_bell_;  // the bell messages to this endpoint's node ring
  // The pool's regions by node (host and device memory), fixed once the pool exists: a verb's
  // translation reads them without going through the pool.
  const Region* regions_;
  const Region* device_;
  size_t nodes_;
  NodeId home_;
  uint32_t client_;
  uint64_t draws_ = 0;  // next_random() calls so far (torn reads, jitter)
  uint64_t last_due_ns_ = 0;
  bool polling_;  // Pool::polling_waits: no idle bells
  bool yielded_ = false;
};

static_assert(layout::kIdleBellOffset + IdleBell::kStride * IdleBell::kBells <=
              layout::kHeaderBytes);

struct Transport {
  static constexpr std::string_view kName = "shm";
  // Verbs are memcpy and std::atomic_ref: only 8-byte words are atomic (dmrt/runtime/transport.h).
  static constexpr bool kLineAtomic = false;
  // The pool's creator runs memory-node services on threads of its own
  // (dmrt/policies/shm/hosting.h).
  static constexpr bool kHostsServices = true;
  using Endpoint = shm::Endpoint;
};

static_assert(dmrt::Transport<Transport>);

}  // namespace dmrt::shm

namespace dmrt {
using ShmTransport = shm::Transport;
// Instantiated once, in libdmrt (dmrt/policies/shm/client.cpp).
extern template class Client<ShmTransport>;
}  // namespace dmrt
