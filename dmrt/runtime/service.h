// Memory-node services: fibers that run on a node, touching its region locally and serving
// messages.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <thread>
#include <utility>

#include "dmrt/runtime/client.h"

namespace dmrt {

// What a service fiber gets. Rules that keep it correct on every transport:
//  * Words that compute nodes change with one-sided atomics (CAS/FAA/masked CAS) are changed by
//    the service through `client` verbs too, never by CPU atomics on `region`: on a real RDMA NIC,
//    NIC atomics are not atomic with respect to the CPU's, so mixing the two loses updates.
//  * `region` (the node's own memory, mapped locally) is for bulk reads and for data no remote
//    atomic touches (a retraining buffer, a log, a private table), or data it owns under a lock
//    taken with a verb. Reads of shared data through it have RDMA READ semantics: 8-byte words
//    are whole, anything larger must be validated.
template <Transport T>
class ServiceContext {
 public:
  ServiceContext(Client<T>& client, std::byte* region, uint64_t region_bytes, unsigned fiber,
                 const std::atomic<bool>& stop)
      : client_(client), region_(region), region_bytes_(region_bytes), fiber_(fiber), stop_(stop) {}

  Client<T>& client() { return client_; }
  NodeId node() const { return client_.home_node(); }
  unsigned fiber() const { return fiber_; }
  std::byte* region() const { return region_; }
  uint64_t region_bytes() const { return region_bytes_; }
  bool stop_requested() const { return stop_.load(std::memory_order_relaxed); }

  // Waits for the next message on this node's service inbox (mailbox 0 unless told otherwise);
  // false when the service is being stopped.
  bool next_message(Message& out, uint32_t mailbox = 0) {
    while (!stop_requested()) {
      if (client_.try_receive(mailbox, out)) return true;
      client_.pause();
    }
    return false;
  }

 private:
  Client<T>& client_;
  std::byte* region_;
  uint64_t region_bytes_;
  unsigned fiber_;
  const std::atomic<bool>& stop_;
};

template <Transport T>
using ServiceBody = std::function<void(ServiceContext<T>&)>;

// Client ids from this base up are reserved for service fibers, so they never collide with the
// ids of compute clients homed on the same node (reply mailboxes are per client id).
inline constexpr uint32_t kServiceClientIdBase = 0x40000000u;

// The lifetime shared by hosts that run a service on an OS thread of this process (shm, verbs):
// start(f) runs f on the thread with the stop flag; stop() (or the destructor) raises the flag,
// joins, and re-throws what f threw.
class ServiceThread {
 public:
  ServiceThread() = default;
  ~ServiceThread() {
    try {
      stop();
    } catch (...) {
      // A destructor cannot report; call stop() to see the failure.
    }
  }
  ServiceThread(const ServiceThread&) = delete;
  ServiceThread& operator=(const ServiceThread&) = delete;

  void stop() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  }
  // True once a fiber has thrown (the host has then stopped; stop() re-throws the failure).
  bool failed() const { return failed_.load(std::memory_order_acquire); }

 protected:
  // Hosts call it when one fiber fails, so that the others (which poll the stop flag) end too
  // and the failure is reported (failed(), stop()) without waiting for an outside stop.
  void raise_stop() { stop_.store(true, std::memory_order_relaxed); }
  // Runs one service fiber's body; when it throws, the host's other fibers stop too. A guard
  // raises the flag while the exception passes, rather than a catch-and-rethrow on the fiber's
  // stack, which AddressSanitizer cannot follow (it reports a false stack-use-after-scope).
  template <class Body>
  void run_fiber(Body&& body) {
    struct StopOnUnwind {
      ServiceThread* host;
      int pending = std::uncaught_exceptions();
      ~StopOnUnwind() {
        if (std::uncaught_exceptions() > pending) host->raise_stop();
      }
    } guard{this};
    body();
  }
  template <class F>
  void start(F f) {
    thread_ = std::thread([this, f = std::move(f)]() mutable {
      try {
        f(stop_);
      } catch (...) {
        failure_ = std::current_exception();
        failed_.store(true, std::memory_order_release);
      }
    });
  }

 private:
  std::atomic<bool> stop_{false};
  std::exception_ptr failure_;
  std::atomic<bool> failed_{false};
  std::thread thread_;
};

}  // namespace dmrt
