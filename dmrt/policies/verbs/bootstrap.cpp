// The bootstrap server's connection I/O: one epoll thread accepts, reads frames no faster than
// they arrive, enforces the caps and deadlines, and writes replies.
#include "dmrt/policies/verbs/bootstrap.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dmrt/policies/verbs/bootstrap_conn.h"
#include "dmrt/runtime/error.h"

namespace dmrt::verbs {

namespace {

using Clock = BootstrapClock;

void set_nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

std::vector<uint8_t> BootstrapServer::error_frame(const std::string& what) {
  wire::Writer w(wire::Type::kError);
  w.str(what);
  return w.data();
}

BootstrapServer::BootstrapServer(const std::string& address, std::optional<ClusterKey> key,
                                 BootstrapHooks hooks, BootstrapLimits limits,
                                 std::string node_name)
    : key_(std::move(key)),
      hooks_(std::move(hooks)),
      limits_(limits),
      name_(std::move(node_name)),
      generation_(random_u64() | 1) {
  if (address.empty()) return;
  listener_ = std::make_unique<wire::Listener>(address);
  port_ = listener_->port();
  set_nonblocking(listener_->fd());
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0)
    throw TransportError(std::string("bootstrap: cannot create epoll/eventfd: ") +
                         std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listener_->fd();
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listener_->fd(), &ev);
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = std::thread([this] { loop(); });
}

BootstrapServer::~BootstrapServer() {
  stop_.store(true);
  cv_.notify_all();
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  std::vector<int> fds;
  for (auto& [fd, c] : conns_) fds.push_back(fd);
  for (int fd : fds) close_conn(fd);
  release(local_qps_, {});
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

BootstrapStats BootstrapServer::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

// Destroys the QPs whose numbers are in `qpns` (all of them when `qpns` is empty) and drops them
// from `qps`.
void BootstrapServer::release(std::vector<ibv_qp*>& qps, const std::vector<uint32_t>& qpns) {
  uint64_t gone = 0;
  std::erase_if(qps, [&](ibv_qp* q) {
    if (!qpns.empty() && std::find(qpns.begin(), qpns.end(), q->qp_num) == qpns.end()) return false;
    ibv_destroy_qp(q);
    ++gone;
    return true;
  });
  std::lock_guard<std::mutex> g(mu_);
  stats_.server_qps -= gone;
}

void BootstrapServer::loop() {
  epoll_event evs[64];
  while (!stop_.load()) {
    int n = epoll_wait(epoll_fd_, evs, 64, 100);
    for (int i = 0; i < n; ++i) {
      int fd = evs[i].data.fd;
      if (fd == listener_->fd()) {
        accept_all();
        continue;
      }
      if (fd == wake_fd_) {
        uint64_t v;
        (void)!::read(wake_fd_, &v, sizeof v);
        continue;
      }
      auto it = conns_.find(fd);
      if (it == conns_.end()) continue;
      Conn& c = *it->second;
      if (evs[i].events & EPOLLOUT) flush(c);
      if (!conns_.count(fd)) continue;
      if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
    }
    answer_barriers();
    sweep();
  }
}

void BootstrapServer::accept_all() {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t sl = sizeof ss;
    int fd = ::accept4(listener_->fd(), reinterpret_cast<sockaddr*>(&ss), &sl,
                       SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: stop watching the listener for a moment rather than spin on it
        // (sweep() watches it again); connections wait in the kernel's backlog meanwhile.
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listener_->fd(), nullptr);
        accept_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    char host[INET6_ADDRSTRLEN] = "?";
    if (ss.ss_family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, host, sizeof host);
    else if (ss.ss_family == AF_INET6)
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, host, sizeof host);
    {
      std::lock_guard<std::mutex> g(mu_);
      ++stats_.accepted;
    }
    if (!make_room(host)) {
      std::lock_guard<std::mutex> g(mu_);
      ++stats_.refused_busy;
      ::close(fd);
      continue;
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      ++stats_.open;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->source = host;
    c->peer = std::string("peer ") + host;
    c->deadline = Clock::now() + std::chrono::milliseconds(std::min(
                                     limits_.first_request_timeout_ms, limits_.frame_timeout_ms));
    c->server_nonce = random_nonce();
    pend(*c);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    Conn& ref = *c;
    conns_.emplace(fd, std::move(c));
    wire::Hello h;
    h.auth = key_.has_value();
    std::memcpy(h.nonce, ref.server_nonce.data(), kNonceBytes);
    h.generation = generation_;
    wire::Writer hello(wire::Type::kHello);
    wire::write(hello, h);
    reply(ref, hello.data(), false);
  }
}

// `c` is now waiting for a request: counted against the caps, and the newest of its peer's.
void BootstrapServer::pend(Conn& c) {
  if (c.counted_pending) return;
  c.counted_pending = true;
  c.pend_seq = ++pend_seq_;
  ++pending_;
  ++pending_by_peer_[c.source];
}

void BootstrapServer::unpend(Conn& c) {
  if (!c.counted_pending) return;
  c.counted_pending = false;
  --pending_;
  auto it = pending_by_peer_.find(c.source);
  if (it != pending_by_peer_.end() && --it->second == 0) pending_by_peer_.erase(it);
}

// Room for one more pending connection from `peer`: when `peer` holds max_pending_per_peer, its
// own oldest goes; when all hold max_pending, the oldest of the peer with the most goes (the
// newcomer's own on a tie). A peer is thus only ever pushed out by one holding at least as many,
// and the connection that goes is the one that has been silent or slow the longest. False only
// when max_pending is 0.
bool BootstrapServer::make_room(const std::string& peer) {
  if (limits_.max_pending == 0 || limits_.max_pending_per_peer == 0) return false;
  std::string victim;
  auto own = pending_by_peer_.find(peer);
  const unsigned mine = own == pending_by_peer_.end() ? 0 : own->second;
  if (mine >= limits_.max_pending_per_peer) {
    victim = peer;
  } else if (pending_ >= limits_.max_pending) {
    unsigned most = mine;
    victim = peer;
    for (const auto& [p, n] : pending_by_peer_)
      if (n > most) {
        most = n;
        victim = p;
      }
  } else {
    return true;
  }
  int oldest = -1;
  uint64_t seq = UINT64_MAX;
  for (const auto& [fd, c] : conns_)
    if (c->counted_pending && c->source == victim && c->pend_seq < seq) {
      seq = c->pend_seq;
      oldest = fd;
    }
  if (oldest < 0) return pending_ < limits_.max_pending;  // nothing of that peer to evict
  close_conn(oldest);
  std::lock_guard<std::mutex> g(mu_);
  ++stats_.evicted;
  return true;
}

void BootstrapServer::close_conn(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  unpend(c);
  release(c.qps, {});  // the peer left or failed: its QPs go with it
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  {
    std::lock_guard<std::mutex> g(mu_);
    --stats_.open;
    if (c.state == Conn::State::kSession || c.state == Conn::State::kParked) --stats_.sessions;
  }
  conns_.erase(it);
}

void BootstrapServer::sweep() {
  auto now = Clock::now();
  if (accept_paused_until_ != Clock::time_point{} && accept_paused_until_ < now) {
    accept_paused_until_ = {};
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listener_->fd();
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listener_->fd(), &ev);
  }
  std::vector<int> expired;
  for (auto& [fd, c] : conns_)
    if (c->state != Conn::State::kSession && c->deadline < now) expired.push_back(fd);
  for (int fd : expired) {
    Conn& c = *conns_.at(fd);
    if (c.state == Conn::State::kParked) {
      c.state = Conn::State::kDone;
      {
        std::lock_guard<std::mutex> g(mu_);
        --stats_.sessions;
      }
      reply(c,
            error_frame("barrier " + std::to_string(c.barrier) + " at " + name_ +
                        " timed out (a peer never arrived)"),
            true);
      continue;
    }
    if (c.state != Conn::State::kDone) {
      std::lock_guard<std::mutex> g(mu_);
      ++stats_.timed_out;
    }
    close_conn(fd);
  }
}

void BootstrapServer::on_readable(Conn& c) {
  const int fd = c.fd;
  uint8_t buf[16384];
  for (;;) {
    ssize_t got = ::recv(fd, buf, sizeof buf, 0);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
      close_conn(fd);  // the peer left (a session's QPs are released with it)
      return;
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (c.state == Conn::State::kSession || c.state == Conn::State::kParked ||
        c.state == Conn::State::kDone) {
      // Nothing more is expected on this connection: a peer that talks on is not following the
      // protocol, and loses its session.
      {
        std::lock_guard<std::mutex> g(mu_);
        ++stats_.bad_frames;
      }
      close_conn(fd);
      return;
    }
    size_t off = 0;
    while (off < size_t(got)) {
      // The 4-byte length prefix first, then the body as it arrives: never more than arrived.
      if (c.in.size() < 4) {
        size_t take = std::min<size_t>(4 - c.in.size(), size_t(got) - off);
        c.in.insert(c.in.end(), buf + off, buf + off + take);
        off += take;
        if (c.in.size() < 4) break;
        c.want = uint32_t(c.in[0]) | uint32_t(c.in[1]) << 8 | uint32_t(c.in[2]) << 16 |
                 uint32_t(c.in[3]) << 24;
        if (c.want < 8 || c.want > limits_.max_request_bytes) {
          {
            std::lock_guard<std::mutex> g(mu_);
            ++stats_.bad_frames;
          }
          c.state = Conn::State::kDone;
          reply(c,
                error_frame("malformed bootstrap message from " + c.peer + ": frame of " +
                            std::to_string(c.want) + " bytes (at most " +
                            std::to_string(limits_.max_request_bytes) + ")"),
                true);
          return;  // `c` may be gone
        }
        continue;
      }
      size_t take = std::min<size_t>(4 + size_t(c.want) - c.in.size(), size_t(got) - off);
      c.in.insert(c.in.end(), buf + off, buf + off + take);
      off += take;
      if (c.in.size() == 4 + size_t(c.want)) {
        std::vector<uint8_t> frame(c.in.begin() + 4, c.in.end());
        c.in.clear();
        c.in.shrink_to_fit();
        on_frame(c, std::move(frame));
        if (!conns_.count(fd)) return;
        if (c.state != Conn::State::kRequest && c.state != Conn::State::kAuth) {
          if (off < size_t(got)) {  // bytes after the last expected frame
            {
              std::lock_guard<std::mutex> g(mu_);
              ++stats_.bad_frames;
            }
            close_conn(fd);
          }
          return;
        }
      }
    }
  }
}

void BootstrapServer::reply(Conn& c, const std::vector<uint8_t>& body, bool close_after) {
  std::vector<uint8_t> f = framed(body);
  c.out.insert(c.out.end(), f.begin(), f.end());
  if (key_ && body.size() >= 8 &&
      static_cast<wire::Type>(body[6] | body[7] << 8) != wire::Type::kHello) {
    std::vector<uint8_t> a =
        framed(auth_frame(Nonce{}, key_->mac(kReplyLabel, c.server_nonce, c.client_nonce, body)));
    c.out.insert(c.out.end(), a.begin(), a.end());
  }
  c.close_after_write = c.close_after_write || close_after;
  if (close_after) c.deadline = Clock::now() + std::chrono::milliseconds(limits_.frame_timeout_ms);
  flush(c);
}

void BootstrapServer::flush(Conn& c) {
  while (c.out_off < c.out.size()) {
    ssize_t s = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
    if (s < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.fd = c.fd;
        epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
        return;
      }
      close_conn(c.fd);
      return;
    }
    c.out_off += size_t(s);
  }
  c.out.clear();
  c.out.shrink_to_fit();
  c.out_off = 0;
  if (c.close_after_write) {
    close_conn(c.fd);
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = c.fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

// A barrier arrival: `generation, id, parties, from`. Refused when it names another run of this
// node, a barrier that already passed (a replay or a late stranger), other parties, or a node
// that already arrived.
}  // namespace dmrt::verbs
