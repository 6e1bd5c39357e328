// The bootstrap client: authenticated request/reply exchanges with a node's server. A connection
// the node refused, or closed or reset before it answered (a node not started yet, or one shedding
// connections under load), is tried again with bounded exponential backoff until the timeout.
#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "dmrt/policies/verbs/bootstrap_conn.h"
#include "dmrt/runtime/error.h"

namespace dmrt::verbs {

namespace {
uint64_t steady_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

constexpr auto kFirstBackoff = std::chrono::milliseconds(10);
constexpr auto kMaxBackoff = std::chrono::milliseconds(500);

// Runs `attempt(ms left)` until it returns, retrying on ConnectionLost after 10, 20, 40, ... ms
// (at most 500, each drawn from its upper half so that clients shed together do not come back
// together) while `timeout_ms` allows; then TransportError naming the peer, the attempts and the
// last failure. Other errors (refusals answered in words, timeouts, bad MACs) end it at once.
template <class Attempt>
auto with_retry(const std::string& address, uint32_t timeout_ms, const std::string& what,
                Attempt attempt) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(timeout_ms);
  thread_local std::minstd_rand rng(static_cast<unsigned>(steady_ns()));
  auto backoff = kFirstBackoff;
  for (unsigned attempts = 1;; ++attempts) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    try {
      return attempt(static_cast<uint32_t>(std::max<int64_t>(1, left.count())));
    } catch (const wire::ConnectionLost& e) {
      std::uniform_int_distribution<int64_t> pick(backoff.count() / 2, backoff.count());
      const auto pause = std::chrono::milliseconds(pick(rng));
      if (Clock::now() + pause >= deadline)
        throw TransportError(what + " at " + address + " did not answer within " +
                             std::to_string(timeout_ms) + " ms: " + std::to_string(attempts) +
                             " connection attempt" + (attempts == 1 ? "" : "s") +
                             " refused, closed or reset (last: " + e.what() +
                             "); is dmrt-node running there?");
      std::this_thread::sleep_for(pause);
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
  }
}

// One connection and its hello; ConnectionLost when refused, closed or reset before the hello.
BootstrapCall open_once(const std::string& address, const ClusterKey* key, uint32_t timeout_ms,
                        const std::string& what) {
  BootstrapCall out;
  out.address = address;
  out.what = what;
  out.socket = wire::Socket::connect_once(address, what);
  wire::Reader hello = out.socket.receive(timeout_ms);
  if (hello.type() != wire::Type::kHello)
    throw TransportError("malformed bootstrap message from " + what + " at " + address +
                         ": expected a hello");
  wire::Hello h = wire::parse_hello(hello);
  const bool auth = h.auth;
  std::memcpy(out.server_nonce.data(), h.nonce, kNonceBytes);
  out.generation = h.generation;
  if (auth && !key)
    throw TransportError(what + " at " + address +
                         " requires the cluster secret: set DMRT_CLUSTER_SECRET (or secret_file in "
                         "the cluster file) to the secret its nodes use");
  if (!auth && key)
    throw TransportError(what + " at " + address +
                         " serves without a cluster secret, but this process has one: give that "
                         "node the same secret (an unauthenticated node could be anyone)");
  return out;
}
}  // namespace

BootstrapCall bootstrap_open(const std::string& address, const ClusterKey* key, uint32_t timeout_ms,
                             const std::string& what) {
  return with_retry(address, timeout_ms, what,
                    [&](uint32_t left) { return open_once(address, key, left, what); });
}

const std::vector<uint8_t>& bootstrap_request(BootstrapCall& call, const std::vector<uint8_t>& req,
                                              const ClusterKey* key, uint32_t timeout_ms,
                                              BootstrapTiming* timing) {
  const std::string& what = call.what;
  const std::string& address = call.address;
  Nonce client{};
  std::vector<uint8_t> mac_frame;
  if (key) {
    client = random_nonce();
    mac_frame = auth_frame(client, key->mac(kRequestLabel, call.server_nonce, client, req));
  }
  if (timing) timing->sent_ns = steady_ns();
  call.socket.send_frame(req);
  if (key) call.socket.send_frame(mac_frame);
  call.reply = call.socket.receive_frame(timeout_ms);
  if (timing) timing->received_ns = steady_ns();
  if (key) {
    // The reply came: from here a lost connection is an error, not a reason to ask again.
    std::vector<uint8_t> mac_reply;
    try {
      mac_reply = call.socket.receive_frame(timeout_ms);
    } catch (const wire::ConnectionLost& e) {
      throw TransportError(e.what());
    }
    wire::Reader a(std::move(mac_reply), call.socket.peer());
    Nonce ignored{};
    Mac m{};
    if (a.type() == wire::Type::kAuth) {
      a.bytes(ignored.data(), kNonceBytes);
      a.bytes(m.data(), kMacBytes);
    }
    if (a.type() != wire::Type::kAuth ||
        !key->verify(kReplyLabel, call.server_nonce, client, call.reply, m)) {
      wire::Reader r(call.reply, what);
      if (r.type() == wire::Type::kError)
        throw TransportError(what + " at " + address + " refused the request: " + r.str());
      throw TransportError("the answer of " + what + " at " + address +
                           " failed authentication: it holds a different cluster secret");
    }
  }
  return call.reply;
}

BootstrapCall bootstrap_call(const std::string& address,
                             const std::function<std::vector<uint8_t>(uint64_t)>& request,
                             const ClusterKey* key, uint32_t timeout_ms, const std::string& what) {
  // A request is only retried when the node answered nothing: a node sheds a connection (closes
  // it) only before it has read the whole request, so the request was not acted on.
  return with_retry(address, timeout_ms, what, [&](uint32_t left) {
    BootstrapCall out = open_once(address, key, left, what);
    bootstrap_request(out, request(out.generation), key, left);
    return out;
  });
}

}  // namespace dmrt::verbs
