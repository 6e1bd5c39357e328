// Internals of verbs::Cluster shared by its source files (queue pairs, bootstrap, data path,
// mailboxes, the mlx5 probe): per-thread state, the QP bookkeeping and small helpers.
#pragma once

#include <infiniband/verbs.h>

#include <boost/fiber/all.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dmrt/policies/verbs/cluster.h"
#include "dmrt/policies/verbs/transport.h"
#include "dmrt/policies/verbs/wire.h"

namespace dmrt::verbs {

inline std::string err_text(int e) {
  return std::strerror(e);
}

inline constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                               IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;

inline uint32_t random_psn() {
  static thread_local std::mt19937 rng(std::random_device{}());
  return rng() & 0xffffff;
}

inline uint64_t round8(uint64_t n) {
  return (n + 7) & ~uint64_t{7};
}

// This node's end of `qp` as a peer needs it.
wire::QpInfo local_info(const Device& d, ibv_qp* qp, uint32_t psn);

// ---------------------------------------------------------------------------------------------
// Per client thread: its CQ, its QPs (one per target node), its registered staging slab and the
// poller fiber that drains the CQ and wakes the fibers owning the completions.

struct Conn {
  ibv_qp* qp = nullptr;
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  uint64_t rbytes = 0;
  // The target's device memory (dmrt/runtime/address.h): address of its byte 0, rkey, size.
  uint64_t dm_raddr = 0;
  uint32_t dm_rkey = 0;
  uint64_t dm_bytes = 0;
  uint32_t outstanding = 0;  // posted work requests not yet retired
  bool broken = false;       // an error completion moved the QP to ERROR; reconnect before use
  // The bootstrap connection this QP was made on: the peer keeps its end of the QP while it
  // stays open (shared by the QPs of one open_connections call).
  std::shared_ptr<wire::Socket> session;
};

struct Pending;
struct WrTag {
  Pending* pending;
  uint64_t remote;
  uint32_t length;
  uint16_t batch_size;
  NodeId node;
  VerbKind kind;
  bool last;
};
struct Pending {
  unsigned remaining = 0;
  std::string error;
  bool error_is_flush = false;
};

struct ThreadState {
  Cluster* cluster = nullptr;
  unsigned index = 0;
  ibv_cq* cq = nullptr;
  std::vector<Conn> conns;
  std::byte* staging = nullptr;
  ibv_mr* staging_mr = nullptr;
  std::vector<uint32_t> free_slots;
  // Work-request storage per staging slot, kept across round trips (a call owns its slot's
  // entry while its verbs are in flight): the data path allocates nothing once warm.
  struct Scratch {
    std::vector<WrTag> tags;
    std::vector<ibv_send_wr> wrs;
    std::vector<ibv_sge> sges;
  };
  std::vector<Scratch> scratch;
  // Counters for the verbs a mailbox send makes (not reported): sized once, reused by every send.
  Counters mailbox_counters;
  boost::fibers::mutex mu;
  boost::fibers::condition_variable cv;
  bool stop = false;
  bool bound = false;
  boost::fibers::fiber poller;
  std::string fatal;

  ~ThreadState() {
    for (Conn& c : conns)
      if (c.qp) ibv_destroy_qp(c.qp);
    if (cq) ibv_destroy_cq(cq);
    if (staging_mr) ibv_dereg_mr(staging_mr);
    if (staging) std::free(staging);
  }

  // Retires completions: wakes the fibers whose batches finished, records errors.
  void drain();
};

// The ThreadState bound to the calling OS thread (Cluster::bind), or null.
extern thread_local ThreadState* tls_state;

// The calling thread's state for cluster `c`; a clear error when the thread is not bound to it.
ThreadState& current(Cluster* c);

}  // namespace dmrt::verbs
