// dmrt-bench's environment for the verbs transport: joins (or, with no cluster given, starts in
// this process) an RDMA cluster and runs every client on this process's compute node.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/options.h"
#include "bench/report.h"
#include "policies/verbs/transport.h"
#include "runtime/client.h"
#include "runtime/cluster.h"
#include "runtime/error.h"
#include "runtime/layout.h"
#include "runtime/scheduler.h"

namespace dmrt::bench {

template <class T>
struct Env;

// Two ways to run:
//  * --cluster FILE / --nodes LIST: the memory nodes are dmrt-node processes (possibly on other
//    machines); this process is compute node --node (default: the cluster's only compute node).
//  * neither: a one-machine cluster of --memory-nodes memory nodes and one compute node, every
//    node served by this process on 127.0.0.1 over the RDMA device (Soft-RoCE works).
// One dmrt-bench process is one compute node, so the cluster lists exactly one compute node.
template <>
struct Env<VerbsTransport> {
  Env(const Options& opt, const ClusterConfig& given) {
    verbs::Options vo = opt.verbs;
    vo.threads = opt.threads;
    ClusterConfig config = given;
    std::vector<NodeId> compute = config.compute_nodes();
    if (compute.size() != 1)
      throw ConfigError(
          "--transport verbs: one dmrt-bench process is one compute node, but the "
          "cluster lists " +
          std::to_string(compute.size()) +
          " (start one dmrt-bench per compute node with its own cluster file)");
    NodeId self = opt.node >= 0 ? static_cast<NodeId>(opt.node) : compute.front();
    if (self != compute.front())
      throw ConfigError("--node " + std::to_string(opt.node) +
                        " is not the cluster's compute node " + std::to_string(compute.front()));
    embedded_ = opt.cluster.empty() && opt.nodes.empty();
    if (embedded_) {
      for (NodeSpec& n : config.nodes) n.address = "127.0.0.1:" + std::to_string(free_port());
      config.validate();
      verbs::Options mo = vo;
      // Client-thread slots for the memory-node services an index starts here (HStore: its HTS
      // and SLS, which may share a node). Their CQs and staging slabs are made on first use.
      mo.threads = kServiceSlots;
      for (NodeId m : config.memory_nodes())
        servers_.push_back(std::make_unique<verbs::Cluster>(config, m, mo));
    }
    cluster_ = std::make_unique<verbs::Cluster>(config, self, vo);
    for (auto& s : servers_) cluster_->add_colocated(*s);
    std::fprintf(stderr, "%s\n", cluster_->report().c_str());
    cluster_->connect();
    cluster_->barrier();
    stop_nodes_ = opt.stop_nodes && !embedded_;
  }
  ~Env() {
    if (!stop_nodes_) return;
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
};

}  // namespace dmrt::bench
