// Internals of the bootstrap server shared by its source files (connection I/O, request
// handling, the client): one connection's state and the framing helpers.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dmrt/policies/verbs/bootstrap.h"

namespace dmrt::verbs {

using BootstrapClock = std::chrono::steady_clock;

// A frame on the wire: 4-byte little-endian length, then the body.
inline std::vector<uint8_t> framed(const std::vector<uint8_t>& body) {
  std::vector<uint8_t> out(4 + body.size());
  uint32_t n = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) out[i] = uint8_t(n >> (8 * i));
  std::memcpy(out.data() + 4, body.data(), body.size());
  return out;
}

inline std::vector<uint8_t> auth_frame(const Nonce& nonce, const Mac& mac) {
  wire::Writer w(wire::Type::kAuth);
  w.bytes(nonce.data(), nonce.size()).bytes(mac.data(), mac.size());
  return w.data();
}

// A session can sit idle for the whole run; keepalive notices a peer host that died silently.
inline void keepalive(int fd) {
  int on = 1, idle = 30, intvl = 5, cnt = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

struct BootstrapServer::Conn {
  enum class State { kRequest, kAuth, kSession, kParked, kDone };
  int fd = -1;
  std::string peer;
  std::string source;     // the peer's address: per-peer pending limits
  uint64_t pend_seq = 0;  // order of becoming pending: the lowest is the oldest
  State state = State::kRequest;
  std::vector<uint8_t> in;  // bytes of the frame being received (grows only as they arrive)
  uint32_t want = 0;        // its announced length once the 4-byte prefix is in
  std::vector<uint8_t> request;
  Nonce server_nonce{};
  Nonce client_nonce{};
  std::vector<uint8_t> out;
  size_t out_off = 0;
  bool close_after_write = false;
  BootstrapClock::time_point deadline;
  std::vector<ibv_qp*> qps;  // a session's QPs, destroyed with it
  NodeId from = 0;
  uint64_t barrier = 0;          // parked at this barrier id
  std::shared_ptr<Barrier> bar;  // and this is it (it says whether it passed or expired)
  uint32_t clock_seq = 0;        // CLOCK requests answered on this connection
  bool counted_pending = false;
};

}  // namespace dmrt::verbs
