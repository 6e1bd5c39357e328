// dmrt-bench's driver on the verbs transport: joins (or, with no cluster given, starts in
// this process) an RDMA cluster and runs every client on this process's compute node.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/transports/env.h"
#include "dmrt/policies/verbs/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/clock_offset.h"
#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt::bench {

// Two ways to run:
//  * --cluster FILE / --nodes LIST: the memory nodes are dmrt-node processes (possibly on other
//    machines) and every compute node of the cluster is one dmrt-bench process; this one is
//    compute node --node (or its launcher's rank; default: the cluster's only compute node). The
//    compute processes run as one experiment (bench/driver/group.h): the first creates and loads
//    the index, the others attach, every phase starts at a barrier.
//  * neither: a one-machine cluster of --memory-nodes memory nodes and one compute node, every
//    node served by this process on 127.0.0.1 over the RDMA device (Soft-RoCE works).
template <>
struct Env<VerbsTransport> {
  Env(const Options& opt, const ClusterConfig& given) {
    verbs::Options vo = opt.verbs;
    vo.threads = opt.threads;
    ClusterConfig config = given;
    const std::vector<NodeId> compute = config.compute_nodes();
    embedded_ = opt.cluster.empty() && opt.nodes.empty();
    if (compute.empty()) throw ConfigError("--transport verbs: the cluster lists no compute node");
    if (embedded_ && compute.size() != 1)
      throw ConfigError(
          "--transport verbs without --cluster or --nodes runs one compute node in this process; "
          "for several, start dmrt-node and one dmrt-bench per compute node "
          "(docs/rdma-cluster.md)");
    if (opt.node < 0 && compute.size() != 1)
      throw ConfigError("the cluster lists " + std::to_string(compute.size()) +
                        " compute nodes, one dmrt-bench each: give this process's --node, or "
                        "start it under mpirun or srun (its rank is its node id)");
    const NodeId self = opt.node >= 0 ? static_cast<NodeId>(opt.node) : compute.front();
    const auto it = std::find(compute.begin(), compute.end(), self);
    if (it == compute.end())
      throw ConfigError("--node " + std::to_string(self) + " is not a compute node of the cluster" +
                        " (compute nodes: " + list(compute) + ")");
    if (embedded_) {
      for (NodeSpec& n : config.nodes) n.address = "127.0.0.1:" + std::to_string(free_port());
      config.validate();
      verbs::Options mo = vo;
      // Client-thread slots for the memory-node services an index starts here (HStore: its HTS
      // and SLS, which may share a node). Their CQs and staging slabs are made on first use.
      mo.threads = kServiceSlots;
      for (NodeId m : config.memory_nodes())
        servers_.push_back(std::make_unique<verbs::Cluster>(config, m, mo));
    } else {
      vo.threads = opt.threads + 1;  // the last slot serves the group's words (GroupPort)
    }
    cluster_ = std::make_unique<verbs::Cluster>(config, self, vo);
    for (auto& s : servers_) cluster_->add_colocated(*s);
    std::fprintf(stderr, "%s\n", cluster_->report().c_str());
    cluster_->connect();
    cluster_->barrier();
    if (!embedded_) {
      GroupSpec g;
      g.compute = compute;
      g.rank = static_cast<unsigned>(it - compute.begin());
      g.memory = config.memory_nodes();
      g.wait_seconds = opt.attach_wait_seconds;
      g.peer_timeout = opt.peer_timeout_seconds;
      g.no_replacement = replacement_refusal(opt);
      g.label = "memory node " + std::to_string(config.memory_nodes().front());
      attached = std::make_unique<AttachedRun>();
      attached->group = std::make_unique<RunGroup>(
          std::make_unique<GroupPort>(*cluster_, opt.threads, config.memory_nodes().front(),
                                      opt.peer_timeout_seconds),
          std::move(g), [self](const std::string& s) {
            std::fprintf(stderr, "dmrt-bench node %u: %s\n", static_cast<unsigned>(self),
                         s.c_str());
          });
    }
    stop_nodes_ = opt.stop_nodes && !embedded_;
  }
  ~Env() {
    // Only the creator stops the memory nodes, once every compute process is done with them.
    if (!stop_nodes_ || (attached && !attached->creator())) return;
    if (attached) attached->group->await_all_done();
    attached.reset();
    for (NodeId m : cluster_->config().memory_nodes()) {
      try {
        verbs::Cluster::stop_node(cluster_->config().nodes.at(m).address, 10000,
                                  &cluster_->config());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "verbs: could not stop memory node %u: %s\n", m, e.what());
      }
    }
  }

  verbs::Endpoint endpoint(NodeId home, uint32_t client_id) {
    return cluster_->endpoint(home, client_id);
  }
  ThreadHooks hooks() { return cluster_->thread_hooks(); }
  // This host's steady clock against the group's memory node's (the histories' reference clock
  // across hosts; docs/correctness.md, "Histories across hosts").
  ClockOffset clock_offset(Client<VerbsTransport>&) {
    if (embedded_) return {};
    return cluster_->clock_offset(cluster_->config().memory_nodes().front());
  }
  // Completions wake fibers through the poller, so clients interleave without help.
  template <class C>
  void between_ops(C&) {}
  const ClusterConfig& config() const { return cluster_->config(); }
  void begin_phase() {}
  void end_phase(PhaseResult& r) {
    r.transport_summary = cluster_->report();
    // Where the memory nodes' device memory is: "on-chip", "host fallback" or "none".
    nlohmann::json dm = nlohmann::json::object();
    for (NodeId m : cluster_->config().memory_nodes())
      dm[std::to_string(m)] = cluster_->device_memory_mode(m);
    r.transport_report["device_memory"] = dm;
  }
  // Reads the memory nodes' bump words with one client (a 1x1 scheduler: verbs need a fiber).
  uint64_t pool_bytes_used() {
    uint64_t used = 0;
    Scheduler s({1, 1});
    s.run(
        [&](const WorkerId&) {
          Client<VerbsTransport> c(cluster_->endpoint(cluster_->self(), kProbeClient));
          uint64_t start = layout::heap_start(cluster_->config().mailbox);
          for (NodeId m : cluster_->config().memory_nodes()) {
            uint64_t bump = c.read_value<uint64_t>(layout::bump_word(m));
            uint64_t end = std::min(bump, cluster_->config().nodes.at(m).region_bytes);
            if (end > start) used += end - start;
          }
        },
        hooks());
    return used;
  }

 private:
  static constexpr uint32_t kProbeClient = 0x3ffffff0u;  // never a worker's id

  // The group's words through one-sided verbs. Verbs need a thread bound to a client-thread slot
  // with its poller fiber, so one thread owns slot `slot` and runs every call, whichever thread
  // makes it (the driver between phases, the group's heartbeat thread).
  class GroupPort final : public GroupWords {
   public:
    GroupPort(verbs::Cluster& c, unsigned slot, NodeId home, double peer_timeout)
        : c_(c), slot_(slot), home_(home), timeout_(static_cast<int64_t>(peer_timeout * 1000)) {
      thread_ = std::thread([this] { serve(); });
    }
    ~GroupPort() override {
      {
        std::lock_guard<std::mutex> g(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      thread_.join();
    }
    // Every call gives up after the peer timeout: a dead memory node's verb waits for the QP's
    // retries (tens of seconds with a long --timeout-exp), and the group must name the node
    // within its bound. Each task owns what it uses (copies, its own buffer), so the port may
    // finish it after the caller gave up on it.
    uint64_t load(unsigned i) override {
      const GlobalAddress a = word(i);
      return call(home_, [a](Client<VerbsTransport>& c) { return c.read_value<uint64_t>(a); });
    }
    void store(unsigned i, uint64_t v) override {
      const GlobalAddress a = word(i);
      call(home_, [a, v](Client<VerbsTransport>& c) {
        c.write(a, &v, 8);
        return uint64_t{0};
      });
    }
    uint64_t cas(unsigned i, uint64_t expected, uint64_t desired) override {
      const GlobalAddress a = word(i);
      return call(home_, [=](Client<VerbsTransport>& c) { return c.cas(a, expected, desired); });
    }
    uint64_t faa(unsigned i, uint64_t add) override {
      const GlobalAddress a = word(i);
      return call(home_, [=](Client<VerbsTransport>& c) { return c.faa(a, add); });
    }
    void load_range(unsigned first, unsigned n, uint64_t* out) override {
      auto buf = std::make_shared<std::vector<uint64_t>>(n);
      const GlobalAddress a = word(first);
      call(home_, [a, n, buf](Client<VerbsTransport>& c) {
        c.read(a, buf->data(), 8 * n);
        return uint64_t{0};
      });
      std::copy(buf->begin(), buf->end(), out);
    }
    uint64_t node_heartbeat(NodeId m) override {
      return call(m, [m](Client<VerbsTransport>& c) {
        return c.read_value<uint64_t>(GlobalAddress{m, layout::kHeartbeatOffset});
      });
    }

   private:
    GlobalAddress word(unsigned i) const { return {home_, layout::kGroupOffset + 8ull * i}; }
    template <class F>
    std::future<uint64_t> post(F&& f) {
      std::packaged_task<uint64_t(Client<VerbsTransport>&)> task(std::forward<F>(f));
      std::future<uint64_t> done = task.get_future();
      {
        std::lock_guard<std::mutex> g(mu_);
        tasks_.push_back(std::move(task));
      }
      cv_.notify_all();
      return done;
    }
    template <class F>
    uint64_t call(NodeId target, F&& f) {
      std::future<uint64_t> done = post(std::forward<F>(f));
      if (done.wait_for(timeout_) != std::future_status::ready)
        throw PeerLost("memory node " + std::to_string(target) + " did not answer a verb within " +
                       std::to_string(timeout_.count()) + " ms (--peer-timeout-seconds)");
      return done.get();  // rethrows what the verb threw (a lost node)
    }
    void serve() {
      verbs::Cluster::ThreadBinding bind(c_, slot_);
      Client<VerbsTransport> client(c_.endpoint(c_.self(), kGroupClient));
      std::unique_lock<std::mutex> lk(mu_);
      for (;;) {
        cv_.wait(lk, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        auto task = std::move(tasks_.front());
        tasks_.pop_front();
        lk.unlock();
        task(client);
        lk.lock();
      }
    }
    static constexpr uint32_t kGroupClient = 0x3ffffff1u;  // never a worker's id
    verbs::Cluster& c_;
    unsigned slot_;
    NodeId home_;
    std::chrono::milliseconds timeout_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::packaged_task<uint64_t(Client<VerbsTransport>&)>> tasks_;
    bool stop_ = false;
    std::thread thread_;
  };

  static std::string list(const std::vector<NodeId>& v) {
    std::string s;
    for (NodeId n : v) s += (s.empty() ? "" : ", ") + std::to_string(n);
    return s;
  }
  static constexpr unsigned kServiceSlots = 2;

  static uint16_t free_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw ConfigError("verbs: cannot open a socket to pick a free port");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l) != 0) {
      close(fd);
      throw ConfigError("verbs: cannot bind 127.0.0.1 to pick a free port");
    }
    close(fd);
    return ntohs(a.sin_port);
  }

  bool embedded_ = false;
  bool stop_nodes_ = false;
  std::vector<std::unique_ptr<verbs::Cluster>> servers_;  // embedded memory nodes
  std::unique_ptr<verbs::Cluster> cluster_;               // this compute node

 public:
  std::unique_ptr<AttachedRun> attached;  // with a cluster: this process's part of the experiment
};

}  // namespace dmrt::bench
