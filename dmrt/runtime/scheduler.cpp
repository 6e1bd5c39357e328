#include "dmrt/runtime/scheduler.h"

#include <boost/fiber/all.hpp>
#include <mutex>
#include <thread>
#include <vector>

namespace dmrt {

Scheduler::Scheduler(SchedulerOptions opts) : opts_(opts) {
  if (opts_.threads == 0 || opts_.fibers == 0)
    throw ConfigError("scheduler needs at least one thread and one fiber per thread");
}

std::string Scheduler::failure() const {
  std::lock_guard<std::mutex> g(mu_);
  return failure_;
}

std::string worker_name(const WorkerId& w) {
  return "worker " + std::to_string(w.index) + " (thread " + std::to_string(w.thread) + ", fiber " +
         std::to_string(w.fiber) + ")";
}

uint64_t Scheduler::fiber_stack_bytes() {
  return boost::context::stack_traits::default_size();
}

void Scheduler::run(const std::function<void(const WorkerId&)>& body, const ThreadHooks& hooks) {
  stop_.store(false);
  std::mutex mu;
  std::exception_ptr first;
  WorkerId first_worker;
  unsigned failed = 0;

  {
    std::lock_guard<std::mutex> g(mu_);
    failure_.clear();
  }
  auto record = [&](const WorkerId& w, std::exception_ptr e) {
    std::lock_guard<std::mutex> g(mu);
    if (!first) {
      first = e;
      first_worker = w;
      std::lock_guard<std::mutex> g2(mu_);
      failure_ = worker_name(w) + " failed: " + describe(e);
    }
    ++failed;
    request_stop();
  };

  auto thread_main = [&](unsigned t) {
    try {
      if (hooks.on_start) hooks.on_start(t);
    } catch (...) {
      record({t, 0, t * opts_.fibers}, std::current_exception());
      return;
    }
    std::vector<boost::fibers::fiber> fibers;
    fibers.reserve(opts_.fibers);
    for (unsigned f = 0; f < opts_.fibers; ++f) {
      WorkerId w{t, f, t * opts_.fibers + f};
      fibers.emplace_back([&, w] {
        try {
          body(w);
        } catch (...) {
          record(w, std::current_exception());
        }
      });
    }
    for (auto& f : fibers) f.join();
    try {
      if (hooks.on_stop) hooks.on_stop(t);
    } catch (...) {
      record({t, 0, t * opts_.fibers}, std::current_exception());
    }
  };

  if (opts_.threads == 1) {
    thread_main(0);  // keep single-thread runs on the caller's thread (sim, debuggers)
  } else {
    std::vector<std::thread> threads;
    threads.reserve(opts_.threads);
    for (unsigned t = 0; t < opts_.threads; ++t) threads.emplace_back(thread_main, t);
    for (auto& th : threads) th.join();
  }

  if (first) {
    throw WorkerFailure(worker_name(first_worker) + " failed: " + describe(first) +
                            (failed > 1 ? " (" + std::to_string(failed - 1) + " more failed)" : ""),
                        first, failed);
  }
}

}  // namespace dmrt
