// dmrt-node's pieces shared by every transport's host: the command line every host takes, the
// services it was asked to run, and the loop that keeps a node up until it is told to stop.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/service_registry.h"
#if DMRT_TRANSPORT_VERBS
#include "dmrt/policies/verbs/device.h"
#endif
#include "tools/dmrt-node/echo.h"
#include "tools/dmrt-node/services.h"

namespace dmrt::node {

// What every host does with its node, whatever the transport.
struct NodeArgs {
  std::vector<std::string> services;  // --service NAME (repeatable), in order
  bool echo = true;                   // the echo service on mailbox 0 (--no-echo: off)
  long node = -1;                     // --node N
  std::string cluster_file;           // --cluster FILE (verbs; shm with --create)
};

// Set by SIGINT/SIGTERM.
bool signalled();

// Hosts started through a ServiceLauncher, stopped together at exit (each re-throws what its
// fibers threw: stop_all() prints those and says whether all stopped cleanly).
template <Transport T, class Host>
class Launcher : public ServiceLauncher<T> {
 public:
  using Make = std::function<std::unique_ptr<Host>(unsigned fibers, ServiceBody<T> body)>;
  Launcher(NodeId node, Make make) : node_(node), make_(std::move(make)) {}
  NodeId node() const override { return node_; }
  void launch(std::string_view what, unsigned fibers, ServiceBody<T> body) override {
    hosts_.push_back({std::string(what), make_(fibers, std::move(body))});
  }
  // True when a host's fibers have failed (the node then stops and stop_all() says why).
  bool any_failed() const {
    for (const Started& s : hosts_)
      if (s.host->failed()) return true;
    return false;
  }
  // Stops every host (last started first); false when one had failed (printed).
  bool stop_all() {
    bool ok = true;
    while (!hosts_.empty()) {
      auto [what, host] = std::move(hosts_.back());
      hosts_.pop_back();
      try {
        host->stop();
      } catch (const std::exception& e) {
        std::cerr << "dmrt-node " << node_ << ": service " << what << " failed: " << e.what()
                  << std::endl;
        ok = false;
      }
    }
    return ok;
  }

 private:
  struct Started {
    std::string what;
    std::unique_ptr<Host> host;
  };
  NodeId node_;
  Make make_;
  std::vector<Started> hosts_;
};

// Starts the echo service (unless --no-echo) and the requested services on `launcher`, and
// returns the services word to advertise. Prints one line per service.
template <Transport T>
uint64_t start_services(const NodeArgs& args, const Services& registry,
                        ServiceLauncher<T>& launcher, EchoCounters& echo) {
  if (args.echo) launcher.launch("echo", 1, echo_service<T>(echo));
  uint64_t word = 0;
  for (const std::string& name : args.services) {
    word |= registry.start(name, launcher);
    std::string how = registry.describe(name);
    std::cout << "dmrt-node " << launcher.node() << " runs service " << name
              << (how.empty() ? "" : " (" + how + ")") << std::endl;
  }
  return word;
}

// The node's heartbeat (layout::kHeartbeatOffset of its region, a CPU store read by the compute
// processes' verbs or loads): a counter bumped every 100 ms while this process serves the node,
// then layout::kHeartbeatStopped. A compute process that sees it stop ends with an error naming the
// node instead of waiting for a service that no longer answers (bench/driver/group.h).
class Heartbeat {
 public:
  explicit Heartbeat(std::byte* region) : word_(region + layout::kHeartbeatOffset) {
    local::store_word(word_, 1);
    thread_ = std::thread([this] {
      uint64_t n = 1;
      std::unique_lock<std::mutex> lk(mu_);
      while (!cv_.wait_for(lk, std::chrono::milliseconds(100), [&] { return stop_; }))
        local::store_word(word_, ++n);
    });
  }
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    local::store_word(word_, layout::kHeartbeatStopped);
  }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  std::byte* word_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Sleeps until `stop()` says so or a signal arrives.
template <class StopRequested>
void wait_until_stopped(StopRequested stop) {
  while (!stop() && !signalled()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// The node's last words: the echo service's counts, then "stopped"; the exit status.
inline int report_stopped(NodeId node, const NodeArgs& args, const EchoCounters& echo, bool ok) {
  if (args.echo)
    std::cout << "dmrt-node " << node << ": echo answered " << echo.answered.load()
              << " messages, skipped " << echo.bad.load() << " bad messages" << std::endl;
  std::cout << "dmrt-node " << node << " stopped" << std::endl;
  return ok ? 0 : 1;
}

// Each transport's host, run once main.cpp has parsed the command line (whose flags it owns).
// node_shm.cpp: the --transport shm flags. Without --create the node attaches to a pool another
// process made; with it, this process creates the named pool (the cluster file's nodes, or an
// embedded cluster), serves until stopped and removes the pool.
struct ShmArgs {
  std::string pool;
  bool create = false;
  unsigned memory_nodes = 1;
  unsigned compute_nodes = 2;
  uint64_t memory_mb = 1024;
  int numa_node = -1;  // bind the memory nodes' regions there (over the cluster file's `numa`)
};
int run_shm(const ShmArgs& sa, const NodeArgs& args, const Services& registry);
#if DMRT_TRANSPORT_VERBS
// node_verbs.cpp: the --transport verbs flags.
struct VerbsArgs {
  std::string cluster_file;
  std::string nodes;
  std::string stop;
  verbs::Options opts;
};
int run_verbs(const VerbsArgs& va, const NodeArgs& args, const Services& registry);
#endif

}  // namespace dmrt::node
