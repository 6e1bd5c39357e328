#include "policies/verbs/bootstrap.h"

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

#include "runtime/error.h"

namespace dmrt::verbs {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<uint8_t> framed(const std::vector<uint8_t>& body) {
  std::vector<uint8_t> out(4 + body.size());
  uint32_t n = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) out[i] = uint8_t(n >> (8 * i));
  std::memcpy(out.data() + 4, body.data(), body.size());
  return out;
}

std::vector<uint8_t> auth_frame(const Nonce& nonce, const Mac& mac) {
  wire::Writer w(wire::Type::kAuth);
  w.bytes(nonce.data(), nonce.size()).bytes(mac.data(), mac.size());
  return w.data();
}

void set_nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// A session can sit idle for the whole run; keepalive notices a peer host that died silently.
void keepalive(int fd) {
  int on = 1, idle = 30, intvl = 5, cnt = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

}  // namespace

struct BootstrapServer::Conn {
  enum class State { kRequest, kAuth, kSession, kParked, kDone };
  int fd = -1;
  std::string peer;
  State state = State::kRequest;
  std::vector<uint8_t> in;  // bytes of the frame being received (grows only as they arrive)
  uint32_t want = 0;        // its announced length once the 4-byte prefix is in
  std::vector<uint8_t> request;
  Nonce server_nonce{};
  Nonce client_nonce{};
  std::vector<uint8_t> out;
  size_t out_off = 0;
  bool close_after_write = false;
  Clock::time_point deadline;
  std::vector<ibv_qp*> qps;  // a session's QPs, destroyed with it
  NodeId from = 0;
  uint64_t barrier = 0;  // parked at this barrier id
  bool counted_pending = true;
};

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
    if (fd < 0) return;  // EAGAIN, or out of descriptors: the next round tries again
    {
      std::lock_guard<std::mutex> g(mu_);
      ++stats_.accepted;
      if (pending_ >= limits_.max_pending) {
        // Busy with unfinished requests: shed this one at once, holding nothing for it.
        ++stats_.refused_busy;
        ::close(fd);
        continue;
      }
      ++stats_.open;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    char host[INET6_ADDRSTRLEN] = "?";
    if (ss.ss_family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, host, sizeof host);
    else if (ss.ss_family == AF_INET6)
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, host, sizeof host);
    c->peer = std::string("peer ") + host;
    c->deadline = Clock::now() + std::chrono::milliseconds(limits_.frame_timeout_ms);
    c->server_nonce = random_nonce();
    ++pending_;
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

void BootstrapServer::close_conn(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  if (c.counted_pending) --pending_;
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

void BootstrapServer::on_frame(Conn& c, std::vector<uint8_t> frame) {
  if (c.state == Conn::State::kRequest) {
    c.request = std::move(frame);
    if (key_) {
      c.state = Conn::State::kAuth;
      return;
    }
    dispatch(c);
    return;
  }
  // kAuth: the MAC over hello nonce, client nonce and the request.
  bool ok = false;
  try {
    wire::Reader r(std::move(frame), c.peer);
    if (r.type() == wire::Type::kAuth) {
      Mac m;
      r.bytes(c.client_nonce.data(), kNonceBytes);
      r.bytes(m.data(), kMacBytes);
      r.expect_end();
      ok = key_->verify(kRequestLabel, c.server_nonce, c.client_nonce, c.request, m);
    }
  } catch (const std::exception&) {
    ok = false;
  }
  if (!ok) {
    {
      std::lock_guard<std::mutex> g(mu_);
      ++stats_.auth_failures;
    }
    c.state = Conn::State::kDone;
    reply(c,
          error_frame(name_ + " refused " + c.peer +
                      ": authentication failed (wrong or missing cluster secret; set "
                      "DMRT_CLUSTER_SECRET or secret_file to the cluster's secret)"),
          true);
    return;
  }
  dispatch(c);
}

void BootstrapServer::dispatch(Conn& c) {
  c.counted_pending = false;
  --pending_;
  c.state = Conn::State::kDone;
  std::vector<uint8_t> req = c.request;
  try {
    wire::Reader r(std::move(req), c.peer);
    switch (r.type()) {
      case wire::Type::kConnect: {
        uint64_t sessions;
        {
          std::lock_guard<std::mutex> g(mu_);
          sessions = stats_.sessions;
        }
        if (sessions >= limits_.max_sessions) {
          reply(c,
                error_frame(name_ + " holds " + std::to_string(sessions) +
                            " sessions already (the limit): try again later"),
                true);
          return;
        }
        ConnectAnswer a = hooks_.connect(r);
        {
          std::lock_guard<std::mutex> g(mu_);
          stats_.server_qps += a.qps.size();
        }
        if (a.qps.empty()) {
          reply(c, a.reply, true);
          return;
        }
        // The peer replaces QPs that went to ERROR: drop our ends of them.
        if (!a.replaced.empty())
          for (auto& [fd, o] : conns_)
            if (o->state == Conn::State::kSession && o->from == a.from) release(o->qps, a.replaced);
        c.qps = std::move(a.qps);
        c.from = a.from;
        c.state = Conn::State::kSession;
        keepalive(c.fd);
        {
          std::lock_guard<std::mutex> g(mu_);
          ++stats_.sessions;
        }
        reply(c, a.reply, false);
        return;
      }
      case wire::Type::kBarrier: {
        uint64_t id = 0;
        std::string why;
        Arrival a = arrive(r, id, why);
        if (a == Arrival::kRefused) {
          reply(c, error_frame(why), true);
        } else if (a == Arrival::kPassed) {
          reply(c, wire::Writer(wire::Type::kBarrierOk).data(), true);
        } else {
          c.state = Conn::State::kParked;
          c.barrier = id;
          c.deadline = Clock::now() + std::chrono::milliseconds(limits_.barrier_timeout_ms);
          std::lock_guard<std::mutex> g(mu_);
          ++stats_.sessions;
        }
        return;
      }
      case wire::Type::kStop:
        r.expect_end();
        hooks_.stop();  // before the answer: whoever reads STOP_OK finds the node stopping
        reply(c, wire::Writer(wire::Type::kStopOk).data(), true);
        return;
      default:
        reply(c, error_frame("unknown bootstrap request type " + std::to_string(int(r.type()))),
              true);
        return;
    }
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> g(mu_);
      ++stats_.bad_frames;
    }
    reply(c, error_frame(e.what()), true);
  }
}

// Queues one reply frame (and its MAC when authenticated) and sends what the socket takes now.
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
BootstrapServer::Arrival BootstrapServer::arrive(wire::Reader& r, uint64_t& id, std::string& why) {
  wire::BarrierRequest b = wire::parse_barrier(r);
  const uint64_t gen = b.generation;
  id = b.id;
  const uint32_t parties = b.parties;
  const NodeId from = b.from;
  std::lock_guard<std::mutex> g(mu_);
  if (gen != generation_) {
    why = "barrier " + std::to_string(id) + " from node " + std::to_string(from) +
          " names another run of " + name_ + " (generation mismatch: restart every process)";
    return Arrival::kRefused;
  }
  if (parties == 0 || id == 0) {
    why = "barrier with id 0 or no parties";
    return Arrival::kRefused;
  }
  Barrier* bar = nullptr;
  for (Barrier& x : barriers_)
    if (x.id == id) bar = &x;
  if (!bar) {
    if (barriers_.size() >= limits_.max_open_barriers) {
      why = name_ + " already tracks " + std::to_string(barriers_.size()) + " barriers";
      return Arrival::kRefused;
    }
    barriers_.push_back({id, parties, {}, false});
    bar = &barriers_.back();
  }
  if (bar->done) {
    why = "barrier " + std::to_string(id) + " at " + name_ +
          " has already passed: a replayed or late arrival from node " + std::to_string(from);
    return Arrival::kRefused;
  }
  if (bar->parties != parties) {
    why = "barrier " + std::to_string(id) + ": node " + std::to_string(from) + " expects " +
          std::to_string(parties) + " parties, others " + std::to_string(bar->parties);
    return Arrival::kRefused;
  }
  if (std::find(bar->arrived.begin(), bar->arrived.end(), from) != bar->arrived.end()) {
    why = "node " + std::to_string(from) + " arrived twice at barrier " + std::to_string(id) +
          " (a replay, or two processes with one node id)";
    return Arrival::kRefused;
  }
  bar->arrived.push_back(from);
  if (bar->arrived.size() < parties) return Arrival::kWait;
  bar->done = true;
  bar->arrived.clear();
  bar->arrived.shrink_to_fit();
  cv_.notify_all();
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  return Arrival::kPassed;
}

void BootstrapServer::answer_barriers() {
  std::vector<uint64_t> done;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const Barrier& b : barriers_)
      if (b.done) done.push_back(b.id);
  }
  std::vector<Conn*> ready;
  for (auto& [fd, c] : conns_)
    if (c->state == Conn::State::kParked &&
        std::find(done.begin(), done.end(), c->barrier) != done.end())
      ready.push_back(c.get());
  for (Conn* c : ready) {
    c->state = Conn::State::kDone;
    {
      std::lock_guard<std::mutex> g(mu_);
      --stats_.sessions;
    }
    reply(*c, wire::Writer(wire::Type::kBarrierOk).data(), true);
  }
}

std::vector<uint8_t> BootstrapServer::handle_local(const std::vector<uint8_t>& request) {
  try {
    wire::Reader r(request, "this process");
    switch (r.type()) {
      case wire::Type::kConnect: {
        ConnectAnswer a = hooks_.connect(r);
        std::lock_guard<std::mutex> g(mu_);
        stats_.server_qps += a.qps.size();
        if (!a.replaced.empty()) {
          std::vector<ibv_qp*> keep;
          for (ibv_qp* q : local_qps_) {
            if (std::find(a.replaced.begin(), a.replaced.end(), q->qp_num) != a.replaced.end()) {
              ibv_destroy_qp(q);
              --stats_.server_qps;
            } else {
              keep.push_back(q);
            }
          }
          local_qps_ = std::move(keep);
        }
        local_qps_.insert(local_qps_.end(), a.qps.begin(), a.qps.end());
        return a.reply;
      }
      case wire::Type::kBarrier: {
        uint64_t id = 0;
        std::string why;
        Arrival a = arrive(r, id, why);
        if (a == Arrival::kRefused) return error_frame(why);
        if (a == Arrival::kWait) {
          std::unique_lock<std::mutex> lk(mu_);
          auto passed = [&] {
            for (const Barrier& b : barriers_)
              if (b.id == id) return b.done;
            return false;
          };
          if (!cv_.wait_for(lk, std::chrono::milliseconds(limits_.barrier_timeout_ms),
                            [&] { return passed() || stop_.load(); }) ||
              !passed())
            return error_frame("barrier " + std::to_string(id) + " at " + name_ +
                               " timed out (a peer never arrived)");
        }
        return wire::Writer(wire::Type::kBarrierOk).data();
      }
      case wire::Type::kStop:
        hooks_.stop();
        return wire::Writer(wire::Type::kStopOk).data();
      default:
        return error_frame("unknown bootstrap request type " + std::to_string(int(r.type())));
    }
  } catch (const std::exception& e) {
    return error_frame(e.what());
  }
}

// --- client ----------------------------------------------------------------------------------

BootstrapCall bootstrap_call(const std::string& address,
                             const std::function<std::vector<uint8_t>(uint64_t)>& request,
                             const ClusterKey* key, uint32_t timeout_ms, const std::string& what) {
  BootstrapCall out;
  out.socket = wire::Socket::connect(address, timeout_ms, what);
  wire::Reader hello = out.socket.receive(timeout_ms);
  if (hello.type() != wire::Type::kHello)
    throw TransportError("malformed bootstrap message from " + what + " at " + address +
                         ": expected a hello");
  wire::Hello h = wire::parse_hello(hello);
  const bool auth = h.auth;
  Nonce server{};
  std::memcpy(server.data(), h.nonce, kNonceBytes);
  out.generation = h.generation;
  if (auth && !key)
    throw TransportError(what + " at " + address +
                         " requires the cluster secret: set DMRT_CLUSTER_SECRET (or secret_file in "
                         "the cluster file) to the secret its nodes use");
  if (!auth && key)
    throw TransportError(what + " at " + address +
                         " serves without a cluster secret, but this process has one: give that "
                         "node the same secret (an unauthenticated node could be anyone)");
  std::vector<uint8_t> req = request(out.generation);
  out.socket.send_frame(req);
  Nonce client{};
  if (key) {
    client = random_nonce();
    out.socket.send_frame(auth_frame(client, key->mac(kRequestLabel, server, client, req)));
  }
  out.reply = out.socket.receive_frame(timeout_ms);
  if (key) {
    wire::Reader a = out.socket.receive(timeout_ms);
    Nonce ignored{};
    Mac m{};
    if (a.type() == wire::Type::kAuth) {
      a.bytes(ignored.data(), kNonceBytes);
      a.bytes(m.data(), kMacBytes);
    }
    if (a.type() != wire::Type::kAuth || !key->verify(kReplyLabel, server, client, out.reply, m)) {
      wire::Reader r(out.reply, what);
      if (r.type() == wire::Type::kError)
        throw TransportError(what + " at " + address + " refused the request: " + r.str());
      throw TransportError("the answer of " + what + " at " + address +
                           " failed authentication: it holds a different cluster secret");
    }
  }
  return out;
}

}  // namespace dmrt::verbs
