// The bootstrap server's requests: authentication of a request, CONNECT (sessions), barriers
// with run generations, CLOCK (several on one connection), STOP, and the in-process path to the
// same handling.
#include <sys/eventfd.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>

#include "dmrt/policies/verbs/bootstrap_conn.h"
#include "dmrt/runtime/error.h"

namespace dmrt::verbs {

namespace {
using Clock = BootstrapClock;
}  // namespace

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
  unpend(c);
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
        std::shared_ptr<Barrier> bar;
        std::string why;
        Arrival a = arrive(r, id, bar, why);
        if (a == Arrival::kRefused) {
          reply(c, error_frame(why), true);
        } else if (a == Arrival::kPassed) {
          reply(c, wire::Writer(wire::Type::kBarrierOk).data(), true);
        } else {
          c.state = Conn::State::kParked;
          c.barrier = id;
          c.bar = std::move(bar);
          c.deadline = Clock::now() + std::chrono::milliseconds(limits_.barrier_timeout_ms);
          std::lock_guard<std::mutex> g(mu_);
          ++stats_.sessions;
        }
        return;
      }
      case wire::Type::kClock: {
        std::string why;
        std::vector<uint8_t> answer = answer_clock(wire::parse_clock(r), c.clock_seq, why);
        if (answer.empty()) {
          reply(c, error_frame(why), true);
          return;
        }
        // The connection takes the next CLOCK request, with its own MAC (a fresh client nonce,
        // the next sequence number), under the same frame deadline and pending cap as a new
        // connection's request.
        const bool more = ++c.clock_seq < wire::kMaxClockRequests;
        if (more) {
          c.state = Conn::State::kRequest;
          pend(c);
          c.deadline = Clock::now() + std::chrono::milliseconds(limits_.frame_timeout_ms);
        }
        reply(c, answer, !more);
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

// A CLOCK request that must be the `seq`-th of its connection: the answer frame (this node's steady
// clock, read last), or empty with `why` when refused (another run, or a sequence number out of
// order: a replayed or reordered request).
std::vector<uint8_t> BootstrapServer::answer_clock(const wire::ClockRequest& q, uint32_t seq,
                                                   std::string& why) {
  if (q.generation != generation_) {
    why = "clock request from node " + std::to_string(q.from) + " names another run of " + name_ +
          " (generation mismatch: restart every process)";
    return {};
  }
  if (q.seq != seq) {
    why = "clock request " + std::to_string(q.seq) + " from node " + std::to_string(q.from) +
          " out of order: " + name_ + " expected request " + std::to_string(seq) +
          " of this connection (a replay?)";
    return {};
  }
  wire::ClockAnswer a;
  a.seq = q.seq;
  timespec res{};
  clock_getres(CLOCK_MONOTONIC, &res);
  a.resolution_ns = uint64_t(res.tv_sec) * 1'000'000'000u + uint64_t(res.tv_nsec);
  a.now_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now().time_since_epoch())
                                       .count());
  wire::Writer w(wire::Type::kClockOk);
  wire::write(w, a);
  return w.data();
}

// Whether barrier `id` has ended (passed or expired) and was pruned.
bool BootstrapServer::ended_locked(uint64_t id) const {
  return id <= ended_floor_ || ended_.count(id) != 0;
}

// Takes `b` (passed or expired) out of the open table and remembers its id: the ids that ended
// from 1 upwards without a gap as one number, the others in a set whose highest are forgotten first
// beyond max_ended_barriers (a barrier's ids are consecutive, so the set stays small).
void BootstrapServer::end_barrier_locked(Barrier& b) {
  const uint64_t id = b.id;
  barriers_.erase(id);
  stats_.open_barriers = barriers_.size();
  if (id > ended_floor_) ended_.insert(id);
  while (!ended_.empty() && *ended_.begin() == ended_floor_ + 1) {
    ++ended_floor_;
    ended_.erase(ended_.begin());
  }
  while (ended_.size() > limits_.max_ended_barriers) ended_.erase(std::prev(ended_.end()));
  cv_.notify_all();
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
}

// Open barriers whose first arrival is barrier_timeout_ms old: abandoned, so they end (their
// waiters are told it timed out) and their ids are refused from now on.
void BootstrapServer::expire_barriers_locked(Clock::time_point now) {
  std::vector<std::shared_ptr<Barrier>> gone;
  for (auto& [id, b] : barriers_)
    if (b->expires <= now) gone.push_back(b);
  for (auto& b : gone) {
    b->expired = true;
    end_barrier_locked(*b);
  }
}

// A barrier arrival: `generation, id, parties, from`. Refused when it names another run of this
// node, a barrier that already ended (passed or expired: a replay or a late stranger), other
// parties, or a node that already arrived. `bar` receives the barrier waited at.
BootstrapServer::Arrival BootstrapServer::arrive(wire::Reader& r, uint64_t& id,
                                                 std::shared_ptr<Barrier>& bar, std::string& why) {
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
  const auto now = Clock::now();
  expire_barriers_locked(now);
  auto it = barriers_.find(id);
  if (it == barriers_.end()) {
    if (ended_locked(id)) {
      why = "barrier " + std::to_string(id) + " at " + name_ +
            " has already passed or expired: a replayed or late arrival from node " +
            std::to_string(from);
      return Arrival::kRefused;
    }
    if (barriers_.size() >= limits_.max_open_barriers) {
      why = name_ + " already has " + std::to_string(barriers_.size()) +
            " open barriers (the limit; each expires " +
            std::to_string(limits_.barrier_timeout_ms) + " ms after its first arrival)";
      return Arrival::kRefused;
    }
    auto fresh = std::make_shared<Barrier>();
    fresh->id = id;
    fresh->parties = parties;
    fresh->expires = now + std::chrono::milliseconds(limits_.barrier_timeout_ms);
    it = barriers_.emplace(id, std::move(fresh)).first;
    stats_.open_barriers = barriers_.size();
  }
  Barrier& x = *it->second;
  if (x.parties != parties) {
    why = "barrier " + std::to_string(id) + ": node " + std::to_string(from) + " expects " +
          std::to_string(parties) + " parties, others " + std::to_string(x.parties);
    return Arrival::kRefused;
  }
  if (std::find(x.arrived.begin(), x.arrived.end(), from) != x.arrived.end()) {
    why = "node " + std::to_string(from) + " arrived twice at barrier " + std::to_string(id) +
          " (a replay, or two processes with one node id)";
    return Arrival::kRefused;
  }
  bar = it->second;
  x.arrived.push_back(from);
  if (x.arrived.size() < parties) return Arrival::kWait;
  x.done = true;
  x.arrived.clear();
  x.arrived.shrink_to_fit();
  end_barrier_locked(x);  // `it` and its map entry are gone; `bar` keeps it for the waiters
  return Arrival::kPassed;
}

// Answers the connections parked at barriers that ended: passed, or expired (timed out).
void BootstrapServer::answer_barriers() {
  std::vector<std::pair<Conn*, bool>> ready;  // connection, passed
  {
    std::lock_guard<std::mutex> g(mu_);
    expire_barriers_locked(Clock::now());
    for (auto& [fd, c] : conns_)
      if (c->state == Conn::State::kParked && c->bar && (c->bar->done || c->bar->expired))
        ready.emplace_back(c.get(), c->bar->done);
  }
  for (auto [c, passed] : ready) {
    c->state = Conn::State::kDone;
    c->bar.reset();
    {
      std::lock_guard<std::mutex> g(mu_);
      --stats_.sessions;
    }
    if (passed)
      reply(*c, wire::Writer(wire::Type::kBarrierOk).data(), true);
    else
      reply(*c,
            error_frame("barrier " + std::to_string(c->barrier) + " at " + name_ +
                        " timed out (a peer never arrived)"),
            true);
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
        std::shared_ptr<Barrier> bar;
        std::string why;
        Arrival a = arrive(r, id, bar, why);
        if (a == Arrival::kRefused) return error_frame(why);
        if (a == Arrival::kWait) {
          std::unique_lock<std::mutex> lk(mu_);
          // Woken when it ends; without a loop thread (an in-process server) nobody expires it,
          // so the wait ends at its expiry and expires it here.
          cv_.wait_until(lk, bar->expires,
                         [&] { return bar->done || bar->expired || stop_.load(); });
          if (!bar->done && !bar->expired && Clock::now() >= bar->expires)
            expire_barriers_locked(Clock::now());
          if (!bar->done)
            return error_frame("barrier " + std::to_string(id) + " at " + name_ +
                               " timed out (a peer never arrived)");
        }
        return wire::Writer(wire::Type::kBarrierOk).data();
      }
      case wire::Type::kClock: {
        std::string why;
        wire::ClockRequest q = wire::parse_clock(r);
        std::vector<uint8_t> answer = answer_clock(q, q.seq, why);  // no connection to order
        return answer.empty() ? error_frame(why) : answer;
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

}  // namespace dmrt::verbs
