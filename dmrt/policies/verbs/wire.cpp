#include "dmrt/policies/verbs/wire.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "dmrt/runtime/error.h"

namespace dmrt::verbs::wire {

namespace {
using Clock = std::chrono::steady_clock;

addrinfo* resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string p = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), p.c_str(), &hints, &res);
  if (rc != 0) throw ConfigError("cannot resolve '" + host + "': " + gai_strerror(rc));
  return res;
}
}  // namespace

Writer::Writer(Type t) {
  u32(kMagic);
  u16(kVersion);
  u16(static_cast<uint16_t>(t));
}
Writer& Writer::u8(uint8_t v) {
  return bytes(&v, 1);
}
Writer& Writer::u16(uint16_t v) {
  uint8_t b[2] = {uint8_t(v), uint8_t(v >> 8)};
  return bytes(b, 2);
}
Writer& Writer::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) buf_.push_back(uint8_t(v >> (8 * i)));
  return *this;
}
Writer& Writer::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) buf_.push_back(uint8_t(v >> (8 * i)));
  return *this;
}
Writer& Writer::bytes(const void* p, size_t n) {
  auto* c = static_cast<const uint8_t*>(p);
  buf_.insert(buf_.end(), c, c + n);
  return *this;
}
Writer& Writer::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  return bytes(s.data(), s.size());
}
Writer& Writer::qp(const QpInfo& q) {
  u32(q.qpn).u32(q.psn).u16(q.lid).u8(q.mtu);
  return bytes(q.gid, 16);
}

Reader::Reader(std::vector<uint8_t> frame, std::string peer)
    : buf_(std::move(frame)), peer_(std::move(peer)) {
  uint32_t magic = u32();
  uint16_t version = u16();
  if (magic != kMagic)
    throw TransportError("malformed bootstrap message from " + peer_ +
                         ": bad magic (is something other than dmrt listening there?)");
  if (version != kVersion)
    throw TransportError("bootstrap protocol version " + std::to_string(version) + " from " +
                         peer_ + ", this build speaks " + std::to_string(kVersion) +
                         " (run the same dmrt build on every node)");
  type_ = static_cast<Type>(u16());
}
void Reader::need(size_t n) {
  if (pos_ + n > buf_.size())
    throw TransportError("malformed bootstrap message from " + peer_ + ": truncated (" +
                         std::to_string(buf_.size()) + " bytes)");
}
uint8_t Reader::u8() {
  need(1);
  return buf_[pos_++];
}
uint16_t Reader::u16() {
  need(2);
  uint16_t v = uint16_t(buf_[pos_] | (buf_[pos_ + 1] << 8));
  pos_ += 2;
  return v;
}
uint32_t Reader::u32() {
  need(4);
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(buf_[pos_ + i]) << (8 * i);
  pos_ += 4;
  return v;
}
uint64_t Reader::u64() {
  need(8);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(buf_[pos_ + i]) << (8 * i);
  pos_ += 8;
  return v;
}
void Reader::bytes(void* p, size_t n) {
  need(n);
  std::memcpy(p, buf_.data() + pos_, n);
  pos_ += n;
}
std::string Reader::str() {
  uint32_t n = u32();
  need(n);
  std::string s(reinterpret_cast<const char*>(buf_.data() + pos_), n);
  pos_ += n;
  return s;
}
QpInfo Reader::qp() {
  QpInfo q;
  q.qpn = u32();
  q.psn = u32();
  q.lid = u16();
  q.mtu = u8();
  bytes(q.gid, 16);
  return q;
}
void Reader::expect_end() {
  if (pos_ != buf_.size())
    throw TransportError("malformed bootstrap message from " + peer_ + ": " +
                         std::to_string(buf_.size() - pos_) + " trailing bytes");
}

void split_address(const std::string& address, std::string& host, uint16_t& port) {
  auto c = address.rfind(':');
  if (c == std::string::npos || c + 1 == address.size())
    throw ConfigError("address '" + address + "' is not host:port");
  host = address.substr(0, c);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  unsigned long p = 0;
  for (size_t i = c + 1; i < address.size(); ++i) {
    if (address[i] < '0' || address[i] > '9')
      throw ConfigError("address '" + address + "': port is not a number");
    p = p * 10 + unsigned(address[i] - '0');
    if (p > 65535) throw ConfigError("address '" + address + "': port out of range");
  }
  port = static_cast<uint16_t>(p);
}

bool resolves_to_loopback_only(const std::string& host, uint16_t port, std::string* literal) {
  if (host.empty()) return false;  // the wildcard
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return false;
  bool any = false, all = true;
  std::string first;
  for (addrinfo* a = res; a; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    bool loop = false;
    if (a->ai_family == AF_INET) {
      auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      loop = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
      if (first.empty()) first = std::string(text) + ":" + std::to_string(port);
    } else if (a->ai_family == AF_INET6) {
      auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      const uint8_t* b = in6->sin6_addr.s6_addr;
      loop = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
             (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && b[12] == 127);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
      if (first.empty()) first = "[" + std::string(text) + "]:" + std::to_string(port);
    }
    any = true;
    all = all && loop;
  }
  freeaddrinfo(res);
  if (literal) *literal = first;
  return any && all;
}

Hello parse_hello(Reader& r) {
  Hello h;
  uint8_t a = r.u8();
  if (a > 1)
    throw TransportError("malformed hello from " + r.peer() + ": auth flag " + std::to_string(a));
  h.auth = a == 1;
  r.bytes(h.nonce, sizeof h.nonce);
  h.generation = r.u64();
  r.expect_end();
  return h;
}
void write(Writer& w, const Hello& h) {
  w.u8(h.auth ? 1 : 0).bytes(h.nonce, sizeof h.nonce).u64(h.generation);
}

ConnectRequest parse_connect(Reader& r, size_t max_qps) {
  ConnectRequest c;
  c.from = r.u16();
  c.target = r.u16();
  c.nodes = r.u16();
  c.region_bytes = r.u64();
  c.mailboxes = r.u32();
  c.slots = r.u32();
  c.slot_bytes = r.u32();
  uint16_t count = r.u16();
  if (count > max_qps)
    throw TransportError("node " + std::to_string(c.from) + " asks for " + std::to_string(count) +
                         " QPs in one request; at most " + std::to_string(max_qps) + " are served");
  c.qps.reserve(count);
  for (uint16_t i = 0; i < count; ++i) c.qps.push_back(r.qp());
  uint16_t nrep = r.u16();
  if (nrep > max_qps)
    throw TransportError("node " + std::to_string(c.from) + " replaces " + std::to_string(nrep) +
                         " QPs in one request; at most " + std::to_string(max_qps));
  c.replaced.reserve(nrep);
  for (uint16_t i = 0; i < nrep; ++i) c.replaced.push_back(r.u32());
  r.expect_end();
  return c;
}
void write(Writer& w, const ConnectRequest& c) {
  w.u16(c.from)
      .u16(c.target)
      .u16(c.nodes)
      .u64(c.region_bytes)
      .u32(c.mailboxes)
      .u32(c.slots)
      .u32(c.slot_bytes);
  w.u16(static_cast<uint16_t>(c.qps.size()));
  for (const QpInfo& q : c.qps) w.qp(q);
  w.u16(static_cast<uint16_t>(c.replaced.size()));
  for (uint32_t q : c.replaced) w.u32(q);
}

BarrierRequest parse_barrier(Reader& r) {
  BarrierRequest b;
  b.generation = r.u64();
  b.id = r.u64();
  b.parties = r.u32();
  b.from = r.u16();
  r.expect_end();
  return b;
}
void write(Writer& w, const BarrierRequest& b) {
  w.u64(b.generation).u64(b.id).u32(b.parties).u16(b.from);
}

ClockRequest parse_clock(Reader& r) {
  ClockRequest c;
  c.generation = r.u64();
  c.seq = r.u32();
  c.from = r.u16();
  r.expect_end();
  return c;
}
void write(Writer& w, const ClockRequest& c) {
  w.u64(c.generation).u32(c.seq).u16(c.from);
}

ClockAnswer parse_clock_answer(Reader& r) {
  ClockAnswer a;
  a.seq = r.u32();
  a.now_ns = r.u64();
  a.resolution_ns = r.u64();
  r.expect_end();
  return a;
}
void write(Writer& w, const ClockAnswer& a) {
  w.u32(a.seq).u64(a.now_ns).u64(a.resolution_ns);
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    peer_ = std::move(o.peer_);
    o.fd_ = -1;
  }
  return *this;
}
Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {
// One connection attempt on each address `host` resolves to: the connected descriptor, or -1 with
// `last` set to the last error.
int try_connect(const std::string& host, uint16_t port, std::string& last) {
  addrinfo* res = resolve(host, port, false);
  for (addrinfo* a = res; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last = err_text(errno);
      continue;
    }
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      freeaddrinfo(res);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    last = err_text(errno);
    ::close(fd);
  }
  freeaddrinfo(res);
  return -1;
}
}  // namespace

Socket Socket::connect(const std::string& address, uint32_t timeout_ms, const std::string& what) {
  std::string host;
  uint16_t port;
  split_address(address, host, port);
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string last = "no attempt";
  for (;;) {
    int fd = try_connect(host, port, last);
    if (fd >= 0) return Socket(fd, what + " at " + address);
    if (Clock::now() >= deadline)
      throw TransportError(what + " at " + address + " did not answer within " +
                           std::to_string(timeout_ms) + " ms (last error: " + last +
                           "); is dmrt-node running there?");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Socket Socket::connect_once(const std::string& address, const std::string& what) {
  std::string host;
  uint16_t port;
  split_address(address, host, port);
  std::string last = "no address";
  int fd = try_connect(host, port, last);
  if (fd < 0) throw ConnectionLost("connecting to " + what + " at " + address + ": " + last);
  return Socket(fd, what + " at " + address);
}

void Socket::read_exact(void* p, size_t n, uint32_t timeout_ms) {
  auto* c = static_cast<uint8_t*>(p);
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      throw TransportError("no answer from " + peer_ + " within " + std::to_string(timeout_ms) +
                           " ms");
    pollfd pf{fd_, POLLIN, 0};
    int r = ::poll(&pf, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t got = ::recv(fd_, c, n, 0);
    if (got == 0) throw ConnectionLost(peer_ + " closed the bootstrap connection");
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) throw ConnectionLost(peer_ + " reset the bootstrap connection");
      throw TransportError("reading from " + peer_ + " failed: " + err_text(errno));
    }
    c += got;
    n -= static_cast<size_t>(got);
  }
}

void Socket::send_frame(const std::vector<uint8_t>& d) {
  uint8_t len[4];
  uint32_t n = static_cast<uint32_t>(d.size());
  for (int i = 0; i < 4; ++i) len[i] = uint8_t(n >> (8 * i));
  std::vector<uint8_t> all(len, len + 4);
  all.insert(all.end(), d.begin(), d.end());
  size_t off = 0;
  while (off < all.size()) {
    ssize_t s = ::send(fd_, all.data() + off, all.size() - off, MSG_NOSIGNAL);
    if (s < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE || errno == ECONNRESET)
        throw ConnectionLost("sending to " + peer_ + " failed: " + err_text(errno));
      throw TransportError("sending to " + peer_ + " failed: " + err_text(errno));
    }
    off += static_cast<size_t>(s);
  }
}

Reader Socket::receive(uint32_t timeout_ms) {
  return Reader(receive_frame(timeout_ms), peer_);
}

std::vector<uint8_t> Socket::receive_frame(uint32_t timeout_ms) {
  uint8_t len[4];
  read_exact(len, 4, timeout_ms);
  uint32_t n =
      uint32_t(len[0]) | uint32_t(len[1]) << 8 | uint32_t(len[2]) << 16 | uint32_t(len[3]) << 24;
  if (n < 8 || n > kMaxFrame)
    throw TransportError("malformed bootstrap message from " + peer_ + ": frame of " +
                         std::to_string(n) + " bytes");
  std::vector<uint8_t> buf(n);
  read_exact(buf.data(), n, timeout_ms);
  return buf;
}

Listener::Listener(const std::string& address) {
  std::string host;
  uint16_t port;
  split_address(address, host, port);
  addrinfo* res = resolve(host, port, true);
  std::string last = "no address";
  for (addrinfo* a = res; a && fd_ < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // The kernel's largest backlog (net.core.somaxconn, 4096 on current kernels), not 128: every
    // client thread of a job connects at once, and a SYN the full queue drops is retried a second
    // later (40,000 connect/close pairs took 40 s on an idle machine with 128, 300 s in CI).
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      fd_ = fd;
      sockaddr_storage ss{};
      socklen_t sl = sizeof ss;
      getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl);
      port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    } else {
      last = err_text(errno);
      ::close(fd);
    }
  }
  freeaddrinfo(res);
  if (fd_ < 0)
    throw TransportError("cannot listen on " + address + ": " + last +
                         " (another dmrt-node on this port?)");
}
Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}
bool Listener::accept(Socket& out, uint32_t timeout_ms) {
  pollfd pf{fd_, POLLIN, 0};
  int r = ::poll(&pf, 1, static_cast<int>(timeout_ms));
  if (r <= 0) return false;
  sockaddr_storage ss{};
  socklen_t sl = sizeof ss;
  int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &sl, SOCK_CLOEXEC);
  if (fd < 0) return false;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char host[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, host, sizeof host);
  else if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, host, sizeof host);
  out = Socket(fd, std::string("peer ") + host);
  return true;
}

}  // namespace dmrt::verbs::wire
