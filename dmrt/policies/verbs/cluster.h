// verbs::Cluster: one process's view of an RDMA cluster. It opens the device, serves this node's
// region (registered, formatted per dmrt/runtime/layout.h) and its TCP bootstrap endpoint, connects
// RC queue pairs per (client thread, target node), and hands out Endpoints.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dmrt/policies/verbs/auth.h"
#include "dmrt/policies/verbs/bootstrap.h"
#include "dmrt/policies/verbs/device.h"
#include "dmrt/policies/verbs/mlx5_masked.h"
#include "dmrt/runtime/clock_offset.h"
#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/scheduler.h"

struct ibv_mr;
struct ibv_dm;
struct ibv_cq;
struct ibv_qp;

namespace dmrt::verbs {

class Endpoint;
struct ThreadState;
namespace wire {
class Reader;
class Writer;
class Listener;
class Socket;
struct QpInfo;
}  // namespace wire

// Parses a cluster given on the command line: comma-separated `role:size@host:port`, e.g.
// "memory:1GiB@10.0.0.1:7400,compute:64MiB@10.0.0.2:7400". Same meaning as a TOML cluster file;
// errors name the entry (cluster_arg.cpp).
ClusterConfig parse_cluster_arg(const std::string& text);

class Cluster {
 public:
  // Opens the device, maps, formats and registers node `self`'s region and, when the node has an
  // address, starts serving bootstrap requests on it ("host:0" binds a free port: listen_port()).
  Cluster(ClusterConfig config, NodeId self, Options opts = {});
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Creates the per-thread CQs and connects QPs from every client thread to every memory node
  // and to this node (peers that are not up yet are retried until connect_timeout_ms). QPs to
  // other compute nodes are connected on first use.
  void connect();
  // Waits until `parties` processes (default: the cluster's compute nodes) have arrived at the
  // same barrier, rendezvousing at the first memory node. Barriers are numbered by call order.
  void barrier(unsigned parties = 0);
  // How this process's steady clock (Endpoint::now_ns()) relates to node `ref`'s: `samples`
  // CLOCK exchanges over one bootstrap connection (at most wire::kMaxClockRequests), the one with
  // the shortest round trip kept (dmrt/runtime/clock_offset.h). {0, 0} when `ref` is served in this
  // process (self() or colocated): one clock. Throws TransportError naming the node when it cannot
  // be reached, refuses, or answers out of turn.
  ClockOffset clock_offset(NodeId ref, unsigned samples = 16);

  // The Endpoint for a client homed on `home` (must be this node). It uses the QPs and CQ of the
  // OS thread that calls it, which must be bound (thread_hooks() or bind_thread()).
  Endpoint endpoint(NodeId home, uint32_t client_id);
  // Scheduler hooks: on_start(t) binds OS thread t and starts its CQ poller fiber; on_stop(t)
  // stops the poller.
  ThreadHooks thread_hooks();

  // Binds the calling OS thread to client-thread slot `t` for the lifetime of the guard (tests
  // and tools that do not use the Scheduler).
  class ThreadBinding {
   public:
    ThreadBinding(Cluster& c, unsigned t);
    ~ThreadBinding();
    ThreadBinding(const ThreadBinding&) = delete;
    ThreadBinding& operator=(const ThreadBinding&) = delete;

   private:
    Cluster& c_;
    unsigned t_;
  };

  // dmrt-node: blocks until a peer sends STOP or request_stop() is called.
  void serve_until_stopped();
  void request_stop();
  bool stop_requested() const { return stop_.load(); }
  // Asks the dmrt-node at `address` to exit, authenticating with DMRT_CLUSTER_SECRET or the
  // config's secret_file when there is one.
  static void stop_node(const std::string& address, uint32_t timeout_ms = 10000,
                        const ClusterConfig* config = nullptr);
  // The bootstrap authenticates every connection with the cluster secret.
  bool authenticated() const { return key_.has_value(); }
  // Connections, sessions, refusals and the QPs held for peers (for tests and the node's log).
  BootstrapStats bootstrap_stats() const { return bootstrap_->stats(); }

  const ClusterConfig& config() const { return config_; }
  NodeId self() const { return self_; }
  const Options& options() const { return opts_; }
  const Device& device() const { return *device_; }
  uint16_t listen_port() const { return listen_port_; }
  std::byte* local_region() const { return region_; }
  uint64_t local_region_bytes() const { return region_bytes_; }
  // Where this node's device memory (dmrt/runtime/address.h) is: "on-chip" (ibv_alloc_dm: the NIC's
  // own memory), "host fallback" (the device offers none, or less than the config asks, or
  // allocating it failed: a registered host buffer serves the same addresses; said once on
  // stderr, and in report() with the reason) or "none" (the config gives the node none).
  const std::string& device_memory_mode() const { return dm_mode_; }
  // The same, as node `n` said when this node connected to it ("unknown" before that).
  std::string device_memory_mode(NodeId n) const;
  // Start-up report: device, port, GID, MTU, capabilities, how masked CAS is served.
  std::string report() const;
  // Masked CAS is posted as a native mlx5 extended atomic (else a counted READ + CAS loop).
  bool native_masked_cas() const { return native_masked_; }
  // A NIC's DMA reads and writes whole 64-byte lines (the CHIME and Sherman papers' assumption,
  // dmrt/runtime/transport.h); a software device (rxe, siw) copies with memcpy and does not.
  bool line_atomic() const { return !software_device(); }
  // A software device's atomic reads the word, compares and writes it back, even when the compare
  // fails, serialised only against other atomics: a WRITE of the word that lands in between is
  // lost (seen on rxe in Linux 6.1, docs/rdma-cluster.md). Lock releases (Batch::release) then
  // store their word with an atomic.
  bool writes_race_atomics() const { return software_device(); }
  // The NIC returns the old word of a native masked CAS byte-swapped (probed, device-specific).
  bool masked_reply_big_endian() const { return masked_reply_be_; }
  uint64_t ondemand_registrations() const { return ondemand_regs_.load(); }
  // rxe or siw: verbs served by the kernel's CPU, not by a NIC.
  bool software_device() const {
    const std::string& n = device().name();
    return n.rfind("rxe", 0) == 0 || n.rfind("siw", 0) == 0;
  }

  // Other nodes' Clusters served by this same process (dmrt-bench's one-process mode): a
  // memory-node service must run on its node's own Cluster, and this is how code holding only a
  // compute node's Endpoint finds it. Not owned; each must outlive the services started on it.
  void add_colocated(Cluster& other);
  // The Cluster serving `node` in this process (this one for self()), or null when another
  // process serves it.
  Cluster* colocated(NodeId node);

  // Client-thread slots for services started at run time (verbs::ServiceHost): reserve_slot()
  // returns one no other reserver holds, or throws ConfigError when all Options::threads are
  // taken. Only reservers are coordinated: a slot bound directly (dmrt-node's echo service on 0)
  // must not also be reserved.
  unsigned reserve_slot();
  void release_slot(unsigned t);

  // Test hook: make thread t's verbs to `node` use a wrong rkey (provokes error completions).
  void corrupt_rkey_for_testing(unsigned t, NodeId node, uint32_t rkey);

 private:
  friend class Endpoint;
  friend struct ThreadState;

  ThreadState& thread(unsigned t);
  void bind(unsigned t);
  void unbind(unsigned t);
  // Connects (or re-connects after an error) the QPs of `threads` to `node`.
  void open_connections(NodeId node, const std::vector<ThreadState*>& threads);
  // One bootstrap request to `node` (built from its run generation); `session` keeps the
  // connection open (a CONNECT's QPs live as long as it does).
  std::vector<uint8_t> exchange(NodeId node,
                                const std::function<std::vector<uint8_t>(uint64_t)>& request,
                                uint32_t timeout_ms,
                                std::shared_ptr<wire::Socket>* session = nullptr);
  ConnectAnswer answer_connect(wire::Reader& request);
  ibv_qp* create_qp(ibv_cq* cq, uint32_t depth, bool raw_wqe = false) const;
  // Decides how masked CAS is served: native only on an mlx5 device whose loopback probe shows
  // masked-CAS semantics (mlx5_masked.h); otherwise the counted CAS loop, with the reason.
  void choose_masked_cas();
  mlx5::ProbeObservation probe_masked_cas() const;  // defined only in builds with mlx5dv
  void bring_up(ibv_qp* qp, uint32_t my_psn, const wire::QpInfo& peer,
                const std::string& what) const;
  // Allocates, zeroes and registers the node's device memory, or its host fallback.
  void setup_device_memory(uint64_t bytes);

  ClusterConfig config_;
  NodeId self_;
  Options opts_;
  std::unique_ptr<Device> device_;
  std::byte* region_ = nullptr;
  uint64_t region_bytes_ = 0;
  bool region_huge_ = false;
  ibv_mr* region_mr_ = nullptr;
  // Device memory: the NIC's (dm_) registered zero-based, or a host buffer (dm_host_).
  ibv_dm* dm_ = nullptr;
  std::byte* dm_host_ = nullptr;
  ibv_mr* dm_mr_ = nullptr;
  uint64_t dm_bytes_ = 0;
  uint64_t dm_raddr_ = 0;  // the remote address of its byte 0: 0 when zero-based
  std::string dm_mode_ = "none";
  std::string dm_note_;  // why it fell back
  bool native_masked_ = false;
  bool masked_reply_be_ = false;
  std::string masked_report_;

  // Serving side.
  std::optional<ClusterKey> key_;
  std::string bind_note_;  // how and where the bootstrap listens, for report()
  std::unique_ptr<BootstrapServer> bootstrap_;
  uint16_t listen_port_ = 0;
  ibv_cq* server_cq_ = nullptr;
  mutable std::mutex serve_mu_;
  std::condition_variable serve_cv_;
  std::atomic<bool> stop_{false};

  // Client side.
  std::vector<std::unique_ptr<ThreadState>> threads_;
  std::mutex connect_mu_;
  uint64_t barrier_seq_ = 0;
  std::vector<uint64_t> peer_generation_;  // by node: its run generation at first contact
  std::vector<std::string> peer_dm_mode_;  // by node: where its device memory is (serve_mu_)
  std::vector<Cluster*> colocated_;
  std::vector<bool> reserved_;  // by slot; guarded by connect_mu_
  std::atomic<uint64_t> ondemand_regs_{0};
};

}  // namespace dmrt::verbs
