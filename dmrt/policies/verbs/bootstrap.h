// The TCP bootstrap: a bounded server (one epoll thread, capped connections, a deadline per frame,
// memory per connection bounded by what arrived), the in-process path to the same handling, and
// the client call. Every connection starts with a hello carrying a fresh nonce; with a cluster key
// each request and reply is followed by its HMAC. A CONNECT's connection stays open as the peer's
// session: its QPs are destroyed when the peer disconnects or fails. A CLOCK's connection takes
// the next CLOCK request (each with its own MAC and sequence number), up to kMaxClockRequests.
//
// Under pressure no connection is refused at accept: when the pending connections (those still
// sending their request) reach a cap, the oldest pending connection of the peer (source address)
// with the most is closed instead, so a peer that opens idle or slow connections only ever pushes
// out its own, and a client that sends its request at once is served. Barriers leave the table when
// they pass or expire; the ids of ended barriers are remembered compactly and refused.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dmrt/policies/verbs/auth.h"
#include "dmrt/policies/verbs/wire.h"
#include "dmrt/runtime/address.h"

namespace dmrt::verbs {

struct BootstrapLimits {
  // Connections still sending their request. Beyond max_pending_per_peer from one source address,
  // a new one evicts that address's oldest; beyond max_pending in all, the oldest of the address
  // with the most pending connections (ties: the newcomer's own address).
  unsigned max_pending = 64;
  unsigned max_pending_per_peer = 32;
  unsigned max_sessions = 1024;      // connections holding QPs or waiting at a barrier
  uint32_t frame_timeout_ms = 3000;  // a request (and its MAC) must arrive within this
  // A new connection's first request and its MAC must arrive within this (and within
  // frame_timeout_ms) of the hello; later CLOCK requests of the connection within frame_timeout_ms.
  uint32_t first_request_timeout_ms = 1000;
  uint32_t max_request_bytes = 256 << 10;
  uint32_t barrier_timeout_ms = 30000;  // an open barrier expires this long after its first arrival
  unsigned max_open_barriers = 4096;    // barriers not yet passed nor expired
  // Ended (passed or expired) barrier ids remembered beyond the contiguous run from 1, which is
  // kept as one number; past this, the highest are forgotten first.
  unsigned max_ended_barriers = 65536;
};

struct BootstrapStats {
  uint64_t accepted = 0;
  uint64_t refused_busy = 0;  // closed at accept: max_pending is 0
  uint64_t evicted = 0;       // pending connections closed to make room for a newer one
  uint64_t timed_out = 0;     // no complete request within frame_timeout_ms
  uint64_t bad_frames = 0;    // malformed, oversized or unexpected
  uint64_t auth_failures = 0;
  uint64_t open = 0;           // connections open now
  uint64_t sessions = 0;       // of which sessions (holding QPs) or parked at a barrier
  uint64_t server_qps = 0;     // QPs this node holds for its peers
  uint64_t open_barriers = 0;  // barriers not yet passed nor expired
};

// What the Cluster answers to a CONNECT: the reply frame and, on success, the QPs made for the
// peer (owned by the server from then on) and the QPNs of the peer's QPs it replaces.
struct ConnectAnswer {
  std::vector<uint8_t> reply;
  std::vector<ibv_qp*> qps;
  std::vector<uint32_t> replaced;
  NodeId from = 0;
};

struct BootstrapHooks {
  std::function<ConnectAnswer(wire::Reader&)> connect;
  std::function<void()> stop;
};

class BootstrapServer {
 public:
  // Serves on `address` ("" = in-process only: no socket, no thread). `key` empty: no
  // authentication (the Cluster then binds loopback unless told otherwise).
  BootstrapServer(const std::string& address, std::optional<ClusterKey> key, BootstrapHooks hooks,
                  BootstrapLimits limits, std::string node_name);
  ~BootstrapServer();
  BootstrapServer(const BootstrapServer&) = delete;
  BootstrapServer& operator=(const BootstrapServer&) = delete;

  uint16_t port() const { return port_; }
  uint64_t generation() const { return generation_; }
  bool authenticated() const { return key_.has_value(); }
  // A request from this process for the node it serves: handled without the network (a barrier
  // blocks until it passes or times out).
  std::vector<uint8_t> handle_local(const std::vector<uint8_t>& request);
  BootstrapStats stats() const;

 private:
  struct Conn;
  struct Barrier;
  enum class Arrival { kPassed, kWait, kRefused };
  void loop();
  void accept_all();
  void on_readable(Conn& c);
  bool take_frame(Conn& c, std::vector<uint8_t>& frame);
  void on_frame(Conn& c, std::vector<uint8_t> frame);
  void dispatch(Conn& c);
  void reply(Conn& c, const std::vector<uint8_t>& body, bool close_after);
  void flush(Conn& c);
  void close_conn(int fd);
  void pend(Conn& c);
  void unpend(Conn& c);
  bool make_room(const std::string& peer);
  void sweep();
  void answer_barriers();
  Arrival arrive(wire::Reader& r, uint64_t& id, std::shared_ptr<Barrier>& bar, std::string& why);
  void expire_barriers_locked(std::chrono::steady_clock::time_point now);
  void end_barrier_locked(Barrier& b);
  bool ended_locked(uint64_t id) const;
  std::vector<uint8_t> answer_clock(const wire::ClockRequest& q, uint32_t seq, std::string& why);
  void release(std::vector<ibv_qp*>& qps, const std::vector<uint32_t>& qpns);
  static std::vector<uint8_t> error_frame(const std::string& what);

  std::optional<ClusterKey> key_;
  BootstrapHooks hooks_;
  BootstrapLimits limits_;
  std::string name_;
  uint64_t generation_;
  std::unique_ptr<wire::Listener> listener_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;         // loop thread only
  unsigned pending_ = 0;                                         // loop thread only
  std::unordered_map<std::string, unsigned> pending_by_peer_;    // loop thread only
  uint64_t pend_seq_ = 0;                                        // loop thread only
  std::chrono::steady_clock::time_point accept_paused_until_{};  // out of fds: loop thread

  struct Barrier {
    uint64_t id = 0;
    uint32_t parties = 0;
    std::vector<NodeId> arrived;
    std::chrono::steady_clock::time_point expires;
    bool done = false;     // passed
    bool expired = false;  // a party never arrived
  };
  mutable std::mutex mu_;  // barriers_, ended_*, Barrier fields, local_qps_, stats_
  std::condition_variable cv_;
  // Open barriers only; waiters hold their Barrier, which tells them how it ended.
  std::unordered_map<uint64_t, std::shared_ptr<Barrier>> barriers_;
  uint64_t ended_floor_ = 0;  // every id up to this one has ended
  std::set<uint64_t> ended_;  // ended ids above ended_floor_
  std::vector<ibv_qp*> local_qps_;
  BootstrapStats stats_;
};

// One request to the bootstrap server at `address`: hello, request (built from the server's run
// generation), MAC, reply, reply MAC. The socket stays open in the result (a CONNECT keeps it as
// its session). Throws TransportError naming `what` on refusal, timeout or failed authentication.
struct BootstrapCall {
  wire::Socket socket;
  std::vector<uint8_t> reply;
  uint64_t generation = 0;
  Nonce server_nonce{};  // from the hello: every request of the connection is MACed with it
  std::string address;
  std::string what;
};
BootstrapCall bootstrap_call(const std::string& address,
                             const std::function<std::vector<uint8_t>(uint64_t)>& request,
                             const ClusterKey* key, uint32_t timeout_ms, const std::string& what);

// bootstrap_call in two steps, for a connection that carries several requests (CLOCK):
// bootstrap_open connects and reads the hello; each bootstrap_request sends one request (and its
// MAC, with a fresh client nonce) and returns the verified reply, also left in `call.reply`.
// `timing`, when given, receives the steady-clock ns just before the request's first byte is sent
// (its MAC is computed before) and just after the reply frame arrived (its MAC is checked after).
struct BootstrapTiming {
  uint64_t sent_ns = 0;
  uint64_t received_ns = 0;
};
BootstrapCall bootstrap_open(const std::string& address, const ClusterKey* key, uint32_t timeout_ms,
                             const std::string& what);
const std::vector<uint8_t>& bootstrap_request(BootstrapCall& call,
                                              const std::vector<uint8_t>& request,
                                              const ClusterKey* key, uint32_t timeout_ms,
                                              BootstrapTiming* timing = nullptr);

}  // namespace dmrt::verbs
