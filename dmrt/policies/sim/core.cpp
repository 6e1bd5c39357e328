#include "dmrt/policies/sim/core.h"

#include <algorithm>
#include <boost/fiber/algo/round_robin.hpp>
#include <boost/fiber/operations.hpp>
#include <boost/fiber/type.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dmrt/runtime/error.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"

namespace dmrt::sim {

using boost::fibers::context;

namespace {
thread_local Core* t_active = nullptr;

// How much of a verb's target validate() prefetches.
constexpr uint64_t kPrefetchBytes = 256;

// Payload bytes a verb carries towards the target and back.
uint64_t request_bytes(const Verb& v) {
  switch (v.kind) {
    case VerbKind::kWrite:
      return v.length;
    case VerbKind::kRead:
      return 0;
    case VerbKind::kMaskedCas:
      return 32;  // compare, swap and both masks
    default:
      return 16;  // compare/addend and swap operands
  }
}
uint64_t response_bytes(const Verb& v) {
  switch (v.kind) {
    case VerbKind::kRead:
      return v.length;
    case VerbKind::kWrite:
      return 0;
    default:
      return 8;
  }
}
}  // namespace

// A posted execute() or message: lives on the issuing fiber's stack until it completes, which is
// safe because that fiber stays suspended until the last event referring to it has run.
struct Core::Pending {
  std::span<Batch> batches;
  Counters* counters = nullptr;
  NodeId src = 0;
  context* ctx = nullptr;
  uint64_t fid = 0;
  uint32_t outstanding = 0;
  uint64_t done = 0;       // latest completion seen so far (ps)
  uint64_t cpu_after = 0;  // CPU charged once everything completed (ps)
  // message push
  const MessageHeader* header = nullptr;
  std::span<const std::byte> payload;
  NodeId dst = 0;
  uint32_t mailbox = 0;
  bool pushed = false;
};

// The Boost.Fiber scheduling algorithm: defers every decision to the Core.
class Algorithm : public boost::fibers::algo::algorithm_with_properties<FiberProps> {
 public:
  explicit Algorithm(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  void awakened(context* ctx, FiberProps& p) noexcept override { core_->awakened(ctx, p); }
  context* pick_next() noexcept override { return core_->pick_next(); }
  bool has_ready_fibers() const noexcept override { return core_->has_ready(); }
  void suspend_until(std::chrono::steady_clock::time_point const& tp) noexcept override {
    core_->suspend_until(tp);
  }
  void notify() noexcept override { core_->notify(); }
  boost::fibers::fiber_properties* new_properties(context* ctx) override {
    auto* p = new FiberProps(ctx);
    p->id = core_->next_fiber_id_++;
    return p;
  }

 private:
  std::shared_ptr<Core> core_;
};

Core::Core(const Options& opts, std::shared_ptr<shm::Pool> pool)
    : opts_(opts), pool_(std::move(pool)) {
  opts_.validate();
  auto byte_ps_x1024 = [](double gbps) {
    return static_cast<uint64_t>(std::llround(8000.0 * 1024.0 / gbps));
  };
  nic_.assign(pool_->node_count(), NicState{.byte_ps_x1024 = byte_ps_x1024(opts_.nic_gbps)});
  for (NodeId n = 0; n < nic_.size(); ++n)
    if (opts_.memory_nic_gbps > 0 && pool_->region(n).role == NodeRole::kMemory)
      nic_[n].byte_ps_x1024 = byte_ps_x1024(opts_.memory_nic_gbps);
  stats_.resize(pool_->node_count());
  op_ps_ = static_cast<uint64_t>(std::llround(1e6 / opts_.nic_mops));
  if (op_ps_ == 0) op_ps_ = 1;
  latency_ps_ = opts_.latency_ns * 1000;
  pcie_ps_ = std::min(opts_.pcie_rtt_ns, opts_.latency_ns) * 1000;  // part of the latency
  atomic_words_.assign(kAtomicWords, AtomicWord{});
  cpu_ps_ = opts_.cpu_ns * 1000;
  cpu_verb_ps_ = opts_.cpu_per_verb_ns * 1000;
  poll_ps_ = std::max<uint64_t>(1, opts_.poll_ns) * 1000;  // a pause always advances time
  saturation_ps_ = opts_.saturation_wait_ns * 1000;
  stall_x_ = opts_.stall_seed ? opts_.stall_seed * 0x9e3779b97f4a7c15ull + 1 : 0;
  access_ps_ = opts_.service_access_ns * 1000;
  svc_byte_ps_x1024_ = static_cast<uint64_t>(std::llround(8000.0 * 1024.0 / opts_.service_gbps));
  msg_ps_ = opts_.service_msg_ns * 1000;
  idle_ps_ = std::max<uint64_t>(opts_.service_idle_ns * 1000, poll_ps_);
  svc_.resize(pool_->node_count());
  changes_.resize(pool_->node_count());
  if (opts_.coherence != Coherence::kCoherent) {
    const bool partial = opts_.coherence == Coherence::kPartial;
    const uint64_t coherent_bytes = opts_.coherent_bytes;
    caches_ = std::make_unique<HostCaches>(
        pool_->node_count(), opts_.cache_bytes,
        [this](GlobalAddress line) { return translate(line, 64); },
        [partial, coherent_bytes](GlobalAddress a) {
          return partial && a.in_device_memory() && a.region_offset() < coherent_bytes;
        });
    flush_line_ps_ = opts_.flush_line_ns * 1000;
  }
  watchdog_ps_ = opts_.watchdog_ns * 1000;
  watching_.resize(pool_->node_count());
}

bool Core::active_here() const {
  return t_active == this;
}

void Core::attach(const std::shared_ptr<Core>& self) {
  if (self.get() != this) throw ConfigError("sim: Core::attach needs the core's own shared_ptr");
  if (t_active && t_active != this)
    throw ConfigError("sim: another simulation is already running on this thread");
  if (t_active == this) throw ConfigError("sim: this simulation is already running on this thread");
  if (live_services_ > 0 && service_thread_ != std::this_thread::get_id())
    throw ConfigError(
        "sim: this simulation's memory-node service fibers live on another OS thread (fibers "
        "cannot move); run the simulation on the thread that started them");
  frozen_ = false;
  boost::fibers::use_scheduling_algorithm<Algorithm>(self);
  t_active = this;
  // Copies: a starter may register another service.
  auto starters = starters_;
  for (auto& s : starters) s.second();
}

void Core::detach() {
  if (t_active != this) return;
  // Every client has finished; what is left in the heaps belongs to service fibers. Freezing
  // hides it from the algorithm swap below, which would otherwise move those fibers into
  // round_robin and run them outside virtual time. The dispatcher alone moves over.
  frozen_ = true;
  boost::fibers::use_scheduling_algorithm<boost::fibers::algo::round_robin>();
  t_active = nullptr;
}

void Core::reset_stats() {
  for (auto& s : stats_) s = NicCounters{};
  for (auto& s : svc_) s = ServiceCounters{};
  window_start_ps_ = now_ps_;
  events_processed_ = 0;
  verbs_completed_ = 0;
  messages_sent_ = 0;
  if (caches_) caches_->counters = CoherenceCounters{};
}

// ------------------------------------------------------------------------------------------------
// memory

std::byte* Core::translate(GlobalAddress a, uint64_t len) const {
  if (a.node() >= pool_->node_count())
    throw AddressError("address " + a.to_string() + " names node " + std::to_string(a.node()) +
                       "; the cluster has " + std::to_string(pool_->node_count()) + " nodes");
  const shm::Region& r = pool_->region_of(a);
  const uint64_t off = a.region_offset();
  if (off + len > r.bytes || off + len < off)
    throw AddressError("verb on " + a.to_string() + " of " + std::to_string(len) +
                       " bytes runs past the node's " +
                       (a.in_device_memory() ? "device memory" : "region") + " of " +
                       std::to_string(r.bytes) + " bytes");
  return r.base + off;
}

MailboxRing Core::ring(NodeId node, uint32_t mailbox) const {
  const MailboxGeometry& g = pool_->config().mailbox;
  if (mailbox >= g.mailboxes)
    throw AddressError("mailbox " + std::to_string(mailbox) + " does not exist (nodes have " +
                       std::to_string(g.mailboxes) + ")");
  return MailboxRing(translate({node, layout::mailbox_offset(g, mailbox)}, g.bytes_per_mailbox()),
                     g);
}

void Core::validate(std::span<Batch> batches) const {
  for (const Batch& b : batches)
    for (const Verb& v : b.verbs()) {
      // The verb reaches this memory a wire latency later, after a few hundred other events: the
      // target's first lines are fetched now (a timed run spent about a tenth of its time
      // waiting for them in apply()). Only a hint; it changes nothing.
      const std::byte* p = translate(v.remote, v.length);
      for (uint64_t off = 0; off < v.length && off < kPrefetchBytes; off += 64)
        __builtin_prefetch(p + off);
    }
}

void Core::apply(const Verb& v, Counters& counters) {
  const shm::Region& r = pool_->region_of(v.remote);
  uint64_t attempts = local::apply(r.base + v.remote.region_offset(), v);
  if (v.kind != VerbKind::kMaskedCas || opts_.native_masked_cas) return;
  for (VerbCounters* c :
       {&counters.total, &counters.by_node[v.remote.node()], &counters.role(r.role)}) {
    ++c->emulated_masked_cas;
    if (attempts > 1) c->emulation_retries += attempts - 1;
  }
}

uint64_t Core::flush_cost(std::span<const Batch> batches) {
  uint64_t lines = 0;
  for (const Batch& b : batches)
    for (const Verb& v : b.verbs()) {
      if (v.hint == FlushHint::kNone) continue;
      auto [inval, back] = caches_->hinted_lines(v);
      caches_->counters.lines_invalidated += inval;
      caches_->counters.lines_written_back += back;
      lines += inval + back;
    }
  caches_->counters.flush_ps += lines * flush_line_ps_;
  return lines * flush_line_ps_;
}

void Core::apply_inline(std::span<Batch> batches, Counters& counters) {
  validate(batches);
  for (Batch& b : batches)
    for (const Verb& v : b.verbs()) apply(v, counters);
}

// ------------------------------------------------------------------------------------------------
// the NIC model

// One visit of a verb to a NIC at time t: it needs the message-rate pipeline (op) and the tx / rx
// pipes for the bytes it moves, starts when all of them are free (FCFS: visits are made in
// virtual-time order), and holds each for its own service time. Returns when the last finishes.
uint64_t Core::serve(NodeId node, uint64_t t, bool op, uint64_t tx, uint64_t rx) {
  NicState& n = nic_[node];
  NicCounters& s = stats_[node];
  uint64_t start = t;
  int which = -1;
  if (op && n.op_free > start) start = n.op_free, which = 0;
  if (tx && n.tx_free > start) start = n.tx_free, which = 1;
  if (rx && n.rx_free > start) start = n.rx_free, which = 2;
  uint64_t end = start;
  if (op) {
    n.op_free = start + op_ps_;
    end = std::max(end, n.op_free);
    ++s.ops;
  }
  if (tx) {
    n.tx_free = start + wire_ps(node, tx);
    end = std::max(end, n.tx_free);
    s.tx_bytes += tx;
  }
  if (rx) {
    n.rx_free = start + wire_ps(node, rx);
    end = std::max(end, n.rx_free);
    s.rx_bytes += rx;
  }
  if (which >= 0) {
    uint64_t wait = start - t;
    s.wait_ps[which] += wait;
    if (wait >= saturation_ps_ && s.saturated_at_ps[which] == NicCounters::kNever)
      s.saturated_at_ps[which] = t;
  }
  return end;
}

// ------------------------------------------------------------------------------------------------
// events and the ready queue

namespace {
struct ReadyLater {
  template <class R>
  bool operator()(const R& a, const R& b) const {
    return a.time != b.time ? a.time > b.time : a.id > b.id;
  }
};
}  // namespace

void Core::push_ready(uint64_t time, uint64_t id, context* ctx) {
  ready_.push_back(Ready{time, id, ctx});
  std::push_heap(ready_.begin(), ready_.end(), ReadyLater{});
}

bool Core::event_first() const {
  // Events win ties with fibers: a fiber due at t sees every memory effect of time t.
  return !events_.empty() && (ready_.empty() || events_.top_time() <= ready_.front().time);
}

void Core::process_one() {
  Event e;
  const uint64_t time = events_.pop(e);
  // The next event's verb and pending record sit on the stack of a suspended fiber, usually out
  // of the cache: start fetching them while this one is handled.
  if (!events_.empty()) {
    const Event& next = events_.top();
    __builtin_prefetch(next.verb());  // (of a watch timeout: no address, and harmless)
    __builtin_prefetch(next.pending());
  }
  if (time > now_ps_) now_ps_ = time;
  ++events_processed_;
  if (e.kind() == kWatchTimeout) {
    const Watcher& w = watchers_[e.slot()];
    if (w.active && w.gen == e.arg) wake(e.slot(), time);
    return;
  }
  Pending& p = *e.pending();
  const uint64_t hdr = opts_.header_bytes;
  switch (e.kind()) {
    case kArriveTarget: {
      const Verb& v = *e.verb();
      uint64_t fin =
          serve(v.remote.node(), time, true, hdr + response_bytes(v), hdr + request_bytes(v));
      apply_from(p.src, v, *p.counters);
      if (v.kind != VerbKind::kRead) note_change(v.remote.node(), time);
      // A READ or an atomic on device memory answers without the PCIe round trip to host
      // memory that latency_ps_ includes (Options::pcie_rtt_ns).
      const bool device = v.remote.in_device_memory();
      uint64_t back = latency_ps_;
      if (device && v.kind != VerbKind::kWrite) back -= pcie_ps_;
      // With serialize_atomics, the NIC serialises atomics on one word of host memory: each
      // holds the word for its PCIe read-modify-write, so one that arrives while an earlier one
      // still does answers that much later (it takes effect in arrival order all the same). On
      // device memory the read-modify-write is on the NIC: no wait.
      if (v.is_atomic() && !device && pcie_ps_ && opts_.serialize_atomics) {
        AtomicWord& w = atomic_words_[mix64(v.remote.raw()) & (kAtomicWords - 1)];
        const uint64_t start =
            w.addr == v.remote.raw() && w.busy_until > time ? w.busy_until : time;
        w = {v.remote.raw(), start + pcie_ps_};
        fin += start - time;
      }
      push_event(fin + back, &p, &v, kArriveSource);
      break;
    }
    case kPushArrive: {
      uint64_t bytes = hdr + MailboxRing::kSlotHeader + p.payload.size();
      uint64_t fin = serve(p.dst, time, true, hdr, bytes);
      p.pushed = ring(p.dst, p.mailbox).try_push(*p.header, p.payload);
      if (p.pushed) note_change(p.dst, time);
      push_event(fin + latency_ps_, &p, nullptr, kArriveSource);
      break;
    }
    case kArriveSource: {
      uint64_t back = p.header ? 0 : response_bytes(*e.verb());
      uint64_t fin = serve(p.src, time, false, 0, hdr + back);
      if (fin > p.done) p.done = fin;
      if (!p.header) ++verbs_completed_;
      if (--p.outstanding == 0) {
        --parked_;
        push_ready(p.done + p.cpu_after, p.fid, p.ctx);
      }
      break;
    }
  }
}

FiberProps& Core::props(context* ctx) {
  auto* p = static_cast<FiberProps*>(ctx->get_properties());
  if (!p) {  // the thread's main context before it was ever scheduled
    p = new FiberProps(ctx);
    p->id = next_fiber_id_++;
    ctx->set_properties(p);
  }
  return *p;
}

void Core::reschedule(context* self) {
  for (;;) {
    if (event_first()) {
      process_one();
      continue;
    }
    if (!ready_.empty() && ready_.front().ctx == self) {
      std::pop_heap(ready_.begin(), ready_.end(), ReadyLater{});
      if (ready_.back().time > now_ps_) now_ps_ = ready_.back().time;
      ready_.pop_back();
      return;  // still the earliest: no context switch
    }
    // Someone else is earlier (or nothing is runnable and the dispatcher decides): pick_next
    // pops that fiber; this one is resumed when it reaches the top of the ready heap.
    self->suspend();
    return;
  }
}

context* Core::pick_next() {
  if (frozen_) {
    context* d = dispatcher_;
    dispatcher_ = nullptr;
    return d;
  }
  for (;;) {
    if (event_first()) {
      process_one();
      continue;
    }
    if (!ready_.empty()) {
      std::pop_heap(ready_.begin(), ready_.end(), ReadyLater{});
      Ready r = ready_.back();
      ready_.pop_back();
      if (r.time > now_ps_) now_ps_ = r.time;
      return r.ctx;
    }
    if (dispatcher_) {
      context* d = dispatcher_;
      dispatcher_ = nullptr;
      return d;
    }
    return nullptr;
  }
}

void Core::awakened(context* ctx, FiberProps& p) {
  // The dispatcher only runs when nothing else can: it releases finished fibers.
  if (ctx->is_context(boost::fibers::type::dispatcher_context)) {
    dispatcher_ = ctx;
    return;
  }
  // Woken by Boost (a new fiber, a join, a fiber mutex): due now.
  push_ready(now_ps_, p.id, ctx);
}

bool Core::has_ready() const {
  if (frozen_) return dispatcher_ != nullptr;
  return !ready_.empty() || !events_.empty() || dispatcher_;
}

void Core::suspend_until(std::chrono::steady_clock::time_point tp) {
  if (parked_ > 0 && events_.empty() && ready_.empty()) {
    std::fprintf(stderr,
                 "dmrt sim: deadlock: %llu simulated clients wait for completions but no event "
                 "is pending (virtual time %llu ns)\n",
                 static_cast<unsigned long long>(parked_),
                 static_cast<unsigned long long>(now_ns()));
    std::abort();
  }
  std::unique_lock<std::mutex> lk(mu_);
  if (tp == std::chrono::steady_clock::time_point::max())
    cv_.wait(lk, [this] { return notified_; });
  else
    cv_.wait_until(lk, tp, [this] { return notified_; });
  notified_ = false;
}

void Core::notify() {
  std::lock_guard<std::mutex> g(mu_);
  notified_ = true;
  cv_.notify_all();
}

// ------------------------------------------------------------------------------------------------
// the endpoint operations

void Core::sleep_until_ps(uint64_t t) {
  if (!active_here() || t <= now_ps_) return;
  context* self = context::active();
  push_ready(t, props(self).id, self);
  reschedule(self);
}

void Core::pause() {
  if (!active_here()) {
    boost::this_fiber::yield();
    return;
  }
  sleep_until_ps(now_ps_ + poll_ps_);
}

void Core::charge_cpu(uint64_t ns) {
  sleep_until_ps(now_ps_ + ns * 1000);
}

void Core::execute(NodeId src, std::span<Batch> batches, Counters& counters, bool service) {
  if (!active_here()) {
    apply_inline(batches, counters);
    return;
  }
  if (watchdog_ps_ && now_ps_ > watchdog_ps_) [[unlikely]]
    throw TransportError(std::string("sim: watchdog: a ") + (service ? "service" : "client") +
                         " still posts verbs at " + std::to_string(now_ns()) +
                         " ns of virtual time (Options::watchdog_ns)");
  validate(batches);  // errors are thrown here, in the caller's fiber, before anything is posted
  // The node's own memory (a service's every verb to it, a client's local accesses): applied
  // now, at this fiber's time (every event up to now has run), and paid in CPU time, which
  // overlaps the remote verbs below.
  uint64_t local_ps = 0;
  const bool local = apply_local(src, batches, counters, local_ps, service);
  // Under the coherence model, the flushes its hints ask for: CPU, before and after the verbs.
  const uint64_t flush_ps = caches_ ? flush_cost(batches) : 0;
  context* self = context::active();
  Pending p;
  p.batches = batches;
  p.counters = &counters;
  p.src = src;
  p.ctx = self;
  p.fid = props(self).id;
  const uint64_t hdr = opts_.header_bytes;
  const uint64_t t = now_ps_;
  uint32_t n = 0;
  // Post: the sending NIC takes the verbs in order (one doorbell per batch, batches one after
  // the other); each then travels to its target independently.
  for (uint32_t bi = 0; bi < batches.size(); ++bi) {
    Batch& b = batches[bi];
    if (local && local_batch(batches, bi, src, service)) continue;  // done above
    for (uint16_t vi = 0; vi < b.size(); ++vi) {
      uint64_t dep = serve(src, t, true, hdr + request_bytes(b[vi]), 0);
      push_event(dep + latency_ps_, &p, &b[vi], kArriveTarget);
      ++n;
    }
  }
  if (n == 0) {
    if (local_ps || flush_ps) {
      if (service) svc_[src].cpu_ps += local_ps + flush_ps;
      sleep_until_ps(t + local_ps + flush_ps);
    }
    return;
  }
  p.outstanding = n;
  p.done = t + local_ps;  // completes no sooner than the local work
  p.cpu_after = cpu_ps_ + (n - 1) * cpu_verb_ps_ + flush_ps;
  if (stall_x_ && !service) {  // Options::stall_seed
    stall_x_ ^= stall_x_ << 13;
    stall_x_ ^= stall_x_ >> 7;
    stall_x_ ^= stall_x_ << 17;
    if (stall_x_ % 16 == 0) p.cpu_after += (stall_x_ >> 20) % 20000000;
  }
  if (service) svc_[src].cpu_ps += local_ps + p.cpu_after;
  ++parked_;
  reschedule(self);
}

bool Core::send(NodeId src, NodeId dst, uint32_t mailbox, const MessageHeader& h,
                std::span<const std::byte> payload, bool service) {
  MailboxRing r = ring(dst, mailbox);  // validates node and mailbox
  if (payload.size() > MailboxRing::max_payload(pool_->config().mailbox))
    throw LimitError("message of " + std::to_string(payload.size()) +
                     " bytes exceeds the mailbox slot payload of " +
                     std::to_string(MailboxRing::max_payload(pool_->config().mailbox)) + " bytes");
  if (!active_here()) return r.try_push(h, payload);
  context* self = context::active();
  Pending p;
  p.src = src;
  p.ctx = self;
  p.fid = props(self).id;
  p.header = &h;
  p.payload = payload;
  p.dst = dst;
  p.mailbox = mailbox;
  const uint64_t hdr = opts_.header_bytes;
  const uint64_t t = now_ps_;
  uint64_t dep = serve(src, t, true, hdr + MailboxRing::kSlotHeader + payload.size(), 0);
  push_event(dep + latency_ps_, &p, nullptr, kPushArrive);
  p.outstanding = 1;
  p.done = t;
  p.cpu_after = cpu_ps_;
  if (service) svc_[src].cpu_ps += p.cpu_after;
  ++parked_;
  ++messages_sent_;
  reschedule(self);
  return p.pushed;
}

bool Core::receive(NodeId home, uint32_t mailbox, Message& out) {
  return ring(home, mailbox).try_pop(out);
}

// ------------------------------------------------------------------------------------------------
// memory-node services

bool Core::apply_local(NodeId node, std::span<Batch> batches, Counters& counters, uint64_t& cpu_ps,
                       bool service) {
  uint64_t verbs = 0, bytes = 0;
  bool wrote = false;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (!local_batch(batches, i, node, service)) continue;
    for (const Verb& v : batches[i].verbs()) {
      apply_from(node, v, counters);
      ++verbs;
      const bool data = v.kind == VerbKind::kRead || v.kind == VerbKind::kWrite;
      bytes += data ? v.length : 8;
      wrote |= v.kind != VerbKind::kRead;
    }
  }
  if (verbs == 0) return false;
  if (service) {
    svc_[node].local_verbs += verbs;
    svc_[node].local_bytes += bytes;
  }
  if (wrote) note_change(node, now_ps_);  // other service fibers of the node may be waiting
  cpu_ps = access_ps_ + ((bytes * svc_byte_ps_x1024_) >> 10);
  return true;
}

}  // namespace dmrt::sim
