// Bootstrap over plain TCP: framed, versioned binary messages (no memcached).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dmrt/runtime/error.h"

namespace dmrt::verbs::wire {

inline constexpr uint32_t kMagic = 0x56524d44;  // "DMRV"
// 2: hello, authentication, sessions, generations; 3: device memory; 4: CLOCK
inline constexpr uint16_t kVersion = 4;
inline constexpr uint32_t kMaxFrame = 1 << 20;
// QPs one CONNECT may ask for (one per client thread of the sender); 31 bytes each on the wire.
inline constexpr size_t kMaxQpsPerConnect = 1024;

enum class Type : uint16_t {
  kConnect = 1,    // client -> server: my QPs, please make yours
  kConnectOk = 2,  // server -> client: region and device memory (addr, rkey, bytes), its QPs
  kBarrier = 3,    // client -> server: arrive at barrier `id` of `parties`; answer when all did
  kBarrierOk = 4,
  kStop = 5,  // ask a dmrt-node to exit
  kStopOk = 6,
  kError = 7,     // server -> client: a sentence saying what was wrong
  kHello = 8,     // server -> client on accept: auth required?, server nonce, run generation
  kAuth = 9,      // after a request or a reply: client nonce and the HMAC (auth.h)
  kClock = 10,    // client -> server: read your steady clock now (request k of the connection)
  kClockOk = 11,  // server -> client: its steady clock in ns, the clock's resolution; the
                  // connection then takes the next CLOCK request (kMaxClockRequests in all)
};

// CLOCK requests one connection may carry (a clock measurement's samples share one connection,
// so that each costs one round trip and no TCP handshake).
inline constexpr uint32_t kMaxClockRequests = 64;

// Endpoint of one RC QP as the peer needs it.
struct QpInfo {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint16_t lid = 0;
  uint8_t mtu = 0;  // ibv_mtu enum value
  uint8_t gid[16] = {};
};

// Little-endian writer/reader with bounds checks; a short or inconsistent frame is a clear error.
class Writer {
 public:
  explicit Writer(Type t);
  Writer& u8(uint8_t v);
  Writer& u16(uint16_t v);
  Writer& u32(uint32_t v);
  Writer& u64(uint64_t v);
  Writer& bytes(const void* p, size_t n);
  Writer& str(const std::string& s);
  Writer& qp(const QpInfo& q);
  const std::vector<uint8_t>& data() const { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

class Reader {
 public:
  Reader(std::vector<uint8_t> frame, std::string peer);
  Type type() const { return type_; }
  uint8_t u8();
  uint16_t u16();
  uint32_t u32();
  uint64_t u64();
  void bytes(void* p, size_t n);
  std::string str();
  QpInfo qp();
  void expect_end();
  const std::string& peer() const { return peer_; }

 private:
  void need(size_t n);
  std::vector<uint8_t> buf_;
  size_t pos_ = 0;
  Type type_{};
  std::string peer_;
};

// The bootstrap's messages after the header, each parsed in one place (the server, the client and
// the fuzz target use these). Parsers throw TransportError on a short, long or inconsistent body.
struct Hello {  // kHello
  bool auth = false;
  uint8_t nonce[32] = {};
  uint64_t generation = 0;
};
struct ConnectRequest {  // kConnect
  uint16_t from = 0;
  uint16_t target = 0;
  uint16_t nodes = 0;
  uint64_t region_bytes = 0;
  uint32_t mailboxes = 0, slots = 0, slot_bytes = 0;
  std::vector<QpInfo> qps;
  std::vector<uint32_t> replaced;  // QPNs of the sender's QPs these replace
};
struct BarrierRequest {  // kBarrier
  uint64_t generation = 0;
  uint64_t id = 0;
  uint32_t parties = 0;
  uint16_t from = 0;
};
struct ClockRequest {  // kClock
  uint64_t generation = 0;
  uint32_t seq = 0;  // 0 for the connection's first CLOCK request, then 1, 2, ...
  uint16_t from = 0;
};
struct ClockAnswer {           // kClockOk
  uint32_t seq = 0;            // the request's
  uint64_t now_ns = 0;         // the server's steady clock, ns since its epoch
  uint64_t resolution_ns = 0;  // that clock's resolution (clock_getres)
};
Hello parse_hello(Reader& r);
void write(Writer& w, const Hello& h);
// At most `max_qps` QPs or replaced QPNs are accepted (the count is checked before any is read).
ConnectRequest parse_connect(Reader& r, size_t max_qps);
void write(Writer& w, const ConnectRequest& c);
BarrierRequest parse_barrier(Reader& r);
void write(Writer& w, const BarrierRequest& b);
ClockRequest parse_clock(Reader& r);
void write(Writer& w, const ClockRequest& c);
ClockAnswer parse_clock_answer(Reader& r);
void write(Writer& w, const ClockAnswer& a);

// "host:port" -> pieces; throws ConfigError on a malformed address.
void split_address(const std::string& address, std::string& host, uint16_t& port);

// Whether `host` (a name or a literal) resolves, as a listener would resolve it, to loopback
// addresses only (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104): false when it resolves to none, to
// the wildcard (an empty host), or to any other address. Decided on the resolved addresses,
// never on the spelling: a name such as "127.example" may resolve anywhere. `literal`, when
// given, receives the first resolved address as "host:port" text ("[::1]:port" for IPv6), for
// the caller to bind to what was checked rather than resolve the name again.
bool resolves_to_loopback_only(const std::string& host, uint16_t port,
                               std::string* literal = nullptr);

// The peer refused the connection, or closed or reset it before answering: what a busy or not yet
// started node does, so the caller may try again (bootstrap_call does, with backoff).
class ConnectionLost : public TransportError {
 public:
  using TransportError::TransportError;
};

// A connected TCP socket; closes on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_), peer_(std::move(o.peer_)) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  ~Socket();

  // Connects, retrying until `timeout_ms` passes (the peer may start later): then
  // TransportError naming the address and the last error.
  static Socket connect(const std::string& address, uint32_t timeout_ms, const std::string& what);
  // One attempt on each resolved address, no waiting: ConnectionLost naming the last error when
  // none accepts.
  static Socket connect_once(const std::string& address, const std::string& what);

  void send(const Writer& w) { send_frame(w.data()); }
  void send_frame(const std::vector<uint8_t>& body);
  // Waits up to timeout_ms for one frame. A peer that closes or resets the connection throws
  // ConnectionLost (so does a send to it).
  Reader receive(uint32_t timeout_ms);
  std::vector<uint8_t> receive_frame(uint32_t timeout_ms);
  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }

 private:
  void read_exact(void* p, size_t n, uint32_t timeout_ms);
  int fd_ = -1;
  std::string peer_;
};

// Listening socket bound to host:port (port 0 = any free port; see port()).
class Listener {
 public:
  explicit Listener(const std::string& address);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  uint16_t port() const { return port_; }
  int fd() const { return fd_; }
  // Waits up to timeout_ms for a connection; false on timeout.
  bool accept(Socket& out, uint32_t timeout_ms);

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace dmrt::verbs::wire
