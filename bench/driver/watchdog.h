// dmrt-bench's stall watchdog: turns a hang into exit 1 with what every worker was doing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "dmrt/runtime/error.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/scheduler.h"
#include "dmrt/runtime/stats.h"

namespace dmrt::bench {

// A phase's workers mark each operation in their slot (a sequence number and a busy flag, plain
// relaxed stores on a line of their own: no clock read, nothing shared on the hot path). A
// thread samples the slots every 100 ms of wall-clock time and ends the process with exit 1 when
//  - one operation has been running for `stall_seconds` (a lost completion, a lock that is never
//    released, a livelock: every index operation here completes in well under a second, even
//    under the Soft-RoCE VM), or
//  - a worker failed and the others have not finished `stall_seconds` later (they stop only at
//    their next operation, so one stuck inside an operation, waiting for the failed worker's lock
//    say, would hide the failure for ever).
// Either way it prints the first failure, if any, and each busy worker's operation and key, with
// the round trips and pauses its client made since the operation was first seen: none means it is
// blocked inside one round trip or wait (a lost completion, a server that never answers), many
// that it is retrying (a lock never released, a condition that never clears). A hang in CI
// becomes a diagnosis. _Exit, because the stuck fibers can be neither joined nor unwound.
// stall_seconds 0 = off.
class Watchdog {
 public:
  struct alignas(64) Slot {
    std::atomic<uint64_t> seq{0};  // operations started
    std::atomic<bool> busy{false};
    std::atomic<uint8_t> kind{0};
    std::atomic<uint64_t> key{0};
    // The worker's client, once it has one (set by the worker, read by the watchdog's thread).
    std::atomic<const ClientProgress*> progress{nullptr};

    void begin(OpKind k, Key key_) {
      kind.store(static_cast<uint8_t>(k), std::memory_order_relaxed);
      key.store(key_, std::memory_order_relaxed);
      seq.store(seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      busy.store(true, std::memory_order_release);
    }
    void end() { busy.store(false, std::memory_order_release); }
  };

  Watchdog(std::string phase, Slot* slots, unsigned workers, double stall_seconds,
           const Scheduler& sched)
      : phase_(std::move(phase)), slots_(slots), workers_(workers), sched_(sched) {
    if (stall_seconds <= 0) return;
    thread_ = std::thread([this, limit = std::chrono::duration<double>(stall_seconds)] {
      watch(std::chrono::duration_cast<std::chrono::steady_clock::duration>(limit));
    });
  }
  ~Watchdog() {
    done_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  using Clock = std::chrono::steady_clock;

  struct Counts {
    uint64_t round_trips = 0, pauses = 0;
    bool known = false;  // the worker had a client
  };
  static Counts counts(const Slot& s) {
    const ClientProgress* p = s.progress.load(std::memory_order_acquire);
    if (!p) return {};
    return {p->round_trips.load(std::memory_order_relaxed),
            p->pauses.load(std::memory_order_relaxed), true};
  }
  // " (12 round trips, 3 pauses in that time)": what the worker's client did while the
  // operation ran, as far as the watchdog saw it.
  static std::string moved(const Slot& s, const Counts& then) {
    const Counts now = counts(s);
    if (!now.known || !then.known) return "";
    return " (" + std::to_string(now.round_trips - then.round_trips) + " round trips, " +
           std::to_string(now.pauses - then.pauses) + " pauses in that time)";
  }

  void watch(Clock::duration limit) {
    // Per worker: the operation seen busy at the last sample, and since when.
    std::unique_ptr<uint64_t[]> seen(new uint64_t[workers_]());
    std::unique_ptr<Clock::time_point[]> since(new Clock::time_point[workers_]);
    // And its client's round trips and pauses at that sample.
    std::unique_ptr<Counts[]> at(new Counts[workers_]());
    Clock::time_point failed_at{};
    while (!done_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const auto now = Clock::now();
      for (unsigned w = 0; w < workers_; ++w) {
        const Slot& s = slots_[w];
        uint64_t seq = s.busy.load(std::memory_order_acquire)
                           ? s.seq.load(std::memory_order_relaxed)
                           : 0;  // idle: never stalled
        if (seq != seen[w]) {
          seen[w] = seq;
          since[w] = now;
          at[w] = counts(s);
        } else if (seq && now - since[w] >= limit) {
          fail("worker " + std::to_string(w) + "'s " + describe(s) + " has been running for " +
                   seconds(now - since[w]) + " s",
               seen.get(), since.get(), at.get(), now);
        }
      }
      if (sched_.stop_requested()) {
        if (failed_at == Clock::time_point{}) failed_at = now;
        if (now - failed_at >= limit)
          fail("a worker failed " + seconds(now - failed_at) +
                   " s ago and the others have not stopped",
               seen.get(), since.get(), at.get(), now);
      }
    }
  }

  [[noreturn]] void fail(const std::string& why, const uint64_t* seen,
                         const Clock::time_point* since, const Counts* at, Clock::time_point now) {
    std::string msg =
        "dmrt-bench: no progress in the " + phase_ + " phase: " + why + " (--stall-seconds)\n";
    std::string first = sched_.failure();
    if (!first.empty()) msg += "  first failure: " + first + "\n";
    for (unsigned w = 0; w < workers_; ++w)
      if (seen[w])
        msg += "  worker " + std::to_string(w) + ": " + describe(slots_[w]) + " for " +
               seconds(now - since[w]) + " s" + moved(slots_[w], at[w]) + "\n";
    std::fputs(msg.c_str(), stderr);
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(1);
  }

  static std::string describe(const Slot& s) {
    return std::string(to_string(static_cast<OpKind>(s.kind.load(std::memory_order_relaxed)))) +
           " of key " + std::to_string(s.key.load(std::memory_order_relaxed));
  }
  static std::string seconds(Clock::duration d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", std::chrono::duration<double>(d).count());
    return buf;
  }

  std::string phase_;
  Slot* slots_;
  unsigned workers_;
  const Scheduler& sched_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Test builds only (fault_injection): DMRT_BENCH_FAULT=stall:N makes worker 0's N-th operation of
// a phase spin for ever; fail-stall:N makes worker 1's N-th operation spin (as a worker waiting
// for a lock that a failed worker held would) and then worker 0's 2N-th throw.
// tests/hostile/bench_stall.sh proves the watchdog with them.
struct BenchFault {
  uint64_t at = 0;  // 0 = none
  bool fail = false;

  static BenchFault from_env() {
    BenchFault f;
    const char* v = std::getenv("DMRT_BENCH_FAULT");
    if (!v) return f;
    std::string s(v);
    std::string::size_type colon = s.find(':');
    std::string what = s.substr(0, colon);
    if ((what != "stall" && what != "fail-stall") || colon == std::string::npos)
      throw ConfigError("DMRT_BENCH_FAULT: expected stall:N or fail-stall:N, not '" + s + "'");
    f.at = std::strtoull(s.c_str() + colon + 1, nullptr, 10);
    f.fail = what == "fail-stall";
    return f;
  }
  template <class C>
  void apply(unsigned worker, const Watchdog::Slot& slot, C& client) const {
    const uint64_t n = slot.seq.load(std::memory_order_relaxed);
    if (fail && worker == 0 && n == 2 * at) throw Error("injected failure (DMRT_BENCH_FAULT)");
    if (n == at && worker == (fail ? 1u : 0u))
      for (;;) client.pause();
  }
};

}  // namespace dmrt::bench
