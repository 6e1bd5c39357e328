// sim::Core: the discrete-event engine (virtual clock, NIC queues, verb events) and the Boost.Fiber
// scheduling algorithm that always resumes the fiber with the earliest virtual time.
#pragma once

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>
#include <boost/fiber/properties.hpp>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "dmrt/policies/shm/pool.h"
#include "dmrt/policies/sim/coherence.h"
#include "dmrt/policies/sim/event_queue.h"
#include "dmrt/policies/sim/options.h"
#include "dmrt/runtime/messaging.h"
#include "dmrt/runtime/stats.h"
#include "dmrt/runtime/verbs.h"

namespace dmrt::sim {

// Per-fiber scheduling data: a dense id, assigned in the (deterministic) order the fibers are first
// seen, breaks ties between fibers due at the same virtual time.
struct FiberProps : boost::fibers::fiber_properties {
  explicit FiberProps(boost::fibers::context* ctx) : fiber_properties(ctx) {}
  uint64_t id = 0;
};

// What one NIC (or CXL link) did since the last reset. Times are in picoseconds.
struct NicCounters {
  uint64_t ops = 0;       // verbs posted or served (the message-rate resource)
  uint64_t tx_bytes = 0;  // bytes sent on the wire, headers included
  uint64_t rx_bytes = 0;  // bytes received
  // Total time verbs waited for each resource (op, tx, rx), and when a verb first waited at
  // least Options::saturation_wait_ns for it (kNever when none did).
  uint64_t wait_ps[3] = {0, 0, 0};
  uint64_t saturated_at_ps[3] = {kNever, kNever, kNever};
  static constexpr uint64_t kNever = ~uint64_t{0};
};

// What the memory-node services homed on one node did since the last reset. Times in ps.
struct ServiceCounters {
  uint64_t local_verbs = 0;  // verbs to their own node: applied locally, no NIC
  uint64_t local_bytes = 0;  // payload of those verbs (8 per atomic)
  uint64_t messages = 0;     // messages taken from the node's mailboxes
  uint64_t cpu_ps = 0;       // CPU charged: local accesses, messages, remote verbs, charge_cpu
  uint64_t wakeups = 0;      // blocked pauses ended by a change to the node's memory
};

class Core {
 public:
  Core(const Options& opts, std::shared_ptr<shm::Pool> pool);
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  const Options& options() const { return opts_; }
  shm::Pool& pool() const { return *pool_; }
  const std::shared_ptr<shm::Pool>& pool_ptr() const { return pool_; }

  // Virtual time. Monotone; shared by every fiber of the simulation (the running fiber's time).
  uint64_t now_ps() const { return now_ps_; }
  uint64_t now_ns() const { return now_ps_ / 1000; }

  // True while this thread is running this simulation (between attach() and detach()). Outside,
  // endpoints work untimed: verbs are applied inline like shm (for loading data before a run).
  bool active_here() const;

  // --- called by endpoints from the running fiber -------------------------------------------
  // With `service` (a memory-node service endpoint homed on `src`), the batches to `src` are
  // applied locally at once and charged as the node's CPU time; the others cross the NIC.
  void execute(NodeId src, std::span<Batch> batches, Counters& counters, bool service = false);
  // Two-sided message: one NIC traversal like a WRITE of header + payload, pushed into the ring
  // when it reaches the destination; returns false when the ring was full at that moment.
  bool send(NodeId src, NodeId dst, uint32_t mailbox, const MessageHeader& h,
            std::span<const std::byte> payload, bool service = false);
  bool receive(NodeId home, uint32_t mailbox, Message& out);
  // Advances the calling fiber's clock: pause() by poll_ns, charge_cpu() by `ns`.
  void pause();
  void charge_cpu(uint64_t ns);
  // Suspends the calling fiber until virtual time t (ps). No-op when t <= now.
  void sleep_until_ps(uint64_t t);

  // --- memory-node services (dmrt/policies/sim/service.h)
  // ----------------------------------------- A service's pause: poll_ns, then blocked until
  // `node`'s memory changes, wake_services() is called, or service_idle_ns since the pause began
  // (Options::service_idle_ns).
  void service_pause(NodeId node);
  // CPU a service on `node` spends (charge_cpu, or a message taken from a mailbox).
  void charge_service_cpu(NodeId node, uint64_t ns);
  void service_received(NodeId node);
  // Ends every blocked service pause at the current time (stop requests).
  void wake_services();
  // Services created outside a run register a starter: attach() calls every starter, in
  // registration order, once the virtual-time scheduler is installed on the thread.
  uint64_t add_service_starter(std::function<void()> start);
  void remove_service_starter(uint64_t token);
  // Live service fibers belong to the OS thread that created them (Boost fibers do not move), so
  // while any exist, attach() accepts only that thread.
  void service_launched();
  void service_stopped();
  const std::vector<ServiceCounters>& services() const { return svc_; }

  // --- the per-thread attachment -------------------------------------------------------------
  // Installs the virtual-time scheduling algorithm on the calling thread (before its fibers are
  // created) and makes this core the thread's active simulation.
  void attach(const std::shared_ptr<Core>& self);
  // Restores Boost's round_robin on this thread and deactivates the core. Fibers still in the
  // simulation (memory-node services; clients have all finished) are frozen in virtual time, with
  // their pending events, until the next attach() on this thread.
  void detach();

  // --- statistics ------------------------------------------------------------------------------
  const std::vector<NicCounters>& nics() const { return stats_; }
  uint64_t window_start_ps() const { return window_start_ps_; }
  uint64_t events_processed() const { return events_processed_; }
  uint64_t verbs_completed() const { return verbs_completed_; }
  uint64_t messages_sent() const { return messages_sent_; }
  void reset_stats();
  uint64_t op_ps() const { return op_ps_; }
  // The coherence model's counts since the last reset_stats() (all zero under kCoherent).
  CoherenceCounters coherence() const { return caches_ ? caches_->counters : CoherenceCounters{}; }
  // Wire time of `bytes` at `node`'s NIC, in ps.
  uint64_t wire_ps(NodeId node, uint64_t bytes) const {
    return (bytes * nic_[node].byte_ps_x1024) >> 10;
  }

  std::byte* translate(GlobalAddress a, uint64_t len) const;
  MailboxRing ring(NodeId node, uint32_t mailbox) const;

 private:
  friend class Algorithm;
  struct Pending;
  // What happens at an event's time (EventQueue keeps the time and the order). 16 bytes, so that
  // the queue's nodes are 32, two to a cache line: most are cold when popped.
  struct Event {
    uint64_t word;  // Pending* | kind (the record is 8-aligned), or slot << 2 | kWatchTimeout
    uint64_t arg;   // the verb (kArriveTarget, kArriveSource of a verb), or the watcher generation
    uint8_t kind() const { return static_cast<uint8_t>(word & 3); }
    Pending* pending() const { return reinterpret_cast<Pending*>(word & ~uint64_t{3}); }
    const Verb* verb() const { return reinterpret_cast<const Verb*>(arg); }
    uint32_t slot() const { return static_cast<uint32_t>(word >> 2); }  // kWatchTimeout
  };
  static_assert(sizeof(Event) == 16);
  // A service fiber blocked in service_pause().
  struct Watcher {
    boost::fibers::context* ctx = nullptr;
    uint64_t fid = 0;
    uint64_t gen = 0;
    NodeId node = 0;
    bool active = false;
  };
  struct Ready {
    uint64_t time;
    uint64_t id;
    boost::fibers::context* ctx;
  };
  struct NicState {
    uint64_t op_free = 0, tx_free = 0, rx_free = 0;
    uint64_t byte_ps_x1024 = 0;  // its line rate: ps per byte, x 1024
  };
  // The words host-memory atomics hold (process_one): direct-mapped by address; a slot taken by
  // another word forgets the old one (its wait, rarely, is not charged). Deterministic.
  struct AtomicWord {
    uint64_t addr = 0;
    uint64_t busy_until = 0;  // ps
  };
  static constexpr size_t kAtomicWords = 4096;

  enum : uint8_t { kArriveTarget, kPushArrive, kArriveSource, kWatchTimeout };

  uint64_t serve(NodeId node, uint64_t t, bool op, uint64_t tx, uint64_t rx);
  void apply(const Verb& v, Counters& counters);
  // A verb issued by `host`: through its cache where the coherence model runs (Options::coherence).
  void apply_from(NodeId host, const Verb& v, Counters& counters) {
    if (caches_ && v.kind == VerbKind::kRead)
      caches_->read(host, v);
    else if (caches_ && v.kind == VerbKind::kWrite)
      caches_->write(host, v);
    else
      apply(v, counters);
  }
  // The CPU time the flush hints of an execute() cost (counted as flushed lines), in ps.
  uint64_t flush_cost(std::span<const Batch> batches);
  void apply_inline(std::span<Batch> batches, Counters& counters);
  void validate(std::span<Batch> batches) const;
  void push_event(uint64_t time, Pending* p, const Verb* v, uint8_t kind) {
    events_.push(time, Event{reinterpret_cast<uint64_t>(p) | kind, reinterpret_cast<uint64_t>(v)});
  }
  // A blocked service pause's timeout: watcher `slot`, of generation `gen` (the slot may have
  // been reused by then).
  void push_watch_timeout(uint64_t time, uint32_t slot, uint64_t gen) {
    events_.push(time, Event{uint64_t{slot} << 2 | kWatchTimeout, gen});
  }
  // Applies the batches that target `node` (a service's own memory); false when there were none,
  // else sets `cpu_ps` to the CPU time they cost.
  bool apply_local(NodeId node, std::span<Batch> batches, Counters& counters, uint64_t& cpu_ps,
                   bool service);
  // Whether batch i of a service's (every verb to its node) or a client's (marked by Client::run)
  // group is applied locally.
  static bool local_batch(std::span<const Batch> batches, size_t i, NodeId node, bool service) {
    if (service) return batches[i].size() && batches[i].node() == node;
    return batches[i].local();
  }
  // A write, atomic or message reached `node` at time t: wakes the services blocked on it.
  void note_change(NodeId node, uint64_t t) {
    ++changes_[node];
    if (watching_[node]) wake_watchers(node, t);
  }
  void wake_watchers(NodeId node, uint64_t t);
  void wake(uint32_t slot, uint64_t t);
  void push_ready(uint64_t time, uint64_t id, boost::fibers::context* ctx);
  void process_one();
  // The current fiber is queued (ready heap) or parked (a Pending will queue it): run events and
  // other fibers until it is the earliest again.
  void reschedule(boost::fibers::context* self);
  bool event_first() const;
  FiberProps& props(boost::fibers::context* ctx);
  // For the Algorithm.
  boost::fibers::context* pick_next();
  void awakened(boost::fibers::context* ctx, FiberProps& p);
  bool has_ready() const;
  void suspend_until(std::chrono::steady_clock::time_point tp);
  void notify();

  Options opts_;
  std::shared_ptr<shm::Pool> pool_;
  uint64_t now_ps_ = 0;
  uint64_t next_fiber_id_ = 1;
  uint64_t parked_ = 0;       // fibers waiting for a simulated completion
  EventQueue<Event> events_;  // earliest (time, push order) first
  std::vector<Ready> ready_;  // min-heap on (time, fiber id)
  boost::fibers::context* dispatcher_ = nullptr;
  std::vector<NicState> nic_;
  std::vector<AtomicWord> atomic_words_;
  std::unique_ptr<HostCaches> caches_;  // the coherence model; null under kCoherent
  uint64_t flush_line_ps_ = 0;
  uint64_t watchdog_ps_ = 0;  // Options::watchdog_ns
  std::vector<NicCounters> stats_;
  uint64_t op_ps_ = 0, latency_ps_ = 0, cpu_ps_ = 0, cpu_verb_ps_ = 0, poll_ps_ = 0,
           saturation_ps_ = 0, pcie_ps_ = 0;
  uint64_t window_start_ps_ = 0;
  uint64_t stall_x_ = 0;  // Options::stall_seed's xorshift state
  uint64_t events_processed_ = 0, verbs_completed_ = 0, messages_sent_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;

  // services
  bool frozen_ = false;  // detached: the heaps are kept but handed to no one
  std::vector<ServiceCounters> svc_;
  std::vector<uint64_t> changes_;   // per node: writes, atomics and messages that reached it
  std::vector<uint32_t> watching_;  // per node: active watchers
  std::vector<Watcher> watchers_;   // slots; inactive ones are reused
  uint64_t watch_gen_ = 0, wake_epoch_ = 0;
  uint64_t access_ps_ = 0, svc_byte_ps_x1024_ = 0, msg_ps_ = 0, idle_ps_ = 0;
  std::vector<std::pair<uint64_t, std::function<void()>>> starters_;
  uint64_t next_starter_ = 1;
  unsigned live_services_ = 0;
  std::thread::id service_thread_;
};

}  // namespace dmrt::sim
