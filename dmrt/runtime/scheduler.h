// Scheduler: T OS threads x F Boost.Fiber fibers, clean start/stop, fiber exceptions re-thrown.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>

#include "dmrt/runtime/error.h"

namespace dmrt {

struct WorkerId {
  unsigned thread = 0;
  unsigned fiber = 0;
  unsigned index = 0;  // thread * fibers_per_thread + fiber: unique, dense
};

// "worker N (thread t, fiber f)", as failures and reports name workers.
std::string worker_name(const WorkerId& w);

struct SchedulerOptions {
  unsigned threads = 1;
  unsigned fibers = 1;  // per thread
};

// Per-thread hooks a transport installs: on_start runs on the new OS thread before any worker
// fiber (set a scheduling algorithm, start a completion poller fiber); on_stop runs after every
// worker fiber of that thread has finished (stop the poller).
struct ThreadHooks {
  std::function<void(unsigned thread)> on_start;
  std::function<void(unsigned thread)> on_stop;
};

// Thrown by Scheduler::run when worker fibers threw: names the first failure and the count.
class WorkerFailure : public Error {
 public:
  WorkerFailure(const std::string& what, std::exception_ptr first, unsigned failed)
      : Error(what), first_(std::move(first)), failed_(failed) {}
  const std::exception_ptr& first() const { return first_; }
  unsigned failed() const { return failed_; }

 private:
  std::exception_ptr first_;
  unsigned failed_;
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions opts);

  // Runs `body` on every worker and returns when all have finished. An exception in a worker does
  // not stop the others early unless the body checks stop_requested(); it is kept and re-thrown
  // as WorkerFailure after the join, naming the worker. Also stops all workers on first failure
  // by raising the stop flag, so timed loops end promptly.
  void run(const std::function<void(const WorkerId&)>& body, const ThreadHooks& hooks = {});

  void request_stop() { stop_.store(true, std::memory_order_relaxed); }
  bool stop_requested() const { return stop_.load(std::memory_order_relaxed); }
  // While run() runs, from any thread: "" or the first failure ("worker N (thread t, fiber f)
  // failed: ..."), for a watchdog that must report it when the other workers never finish.
  std::string failure() const;
  const SchedulerOptions& options() const { return opts_; }
  unsigned workers() const { return opts_.threads * opts_.fibers; }
  // Stack bytes reserved for each worker fiber (Boost.Context's default stack).
  static uint64_t fiber_stack_bytes();

 private:
  SchedulerOptions opts_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;  // guards failure_
  std::string failure_;
};

}  // namespace dmrt
