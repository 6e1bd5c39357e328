// The bootstrap client: authenticated request/reply exchanges with a node's server.
#include <chrono>

#include "policies/verbs/bootstrap_conn.h"
#include "runtime/error.h"

namespace dmrt::verbs {

namespace {
uint64_t steady_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}
}  // namespace

BootstrapCall bootstrap_open(const std::string& address, const ClusterKey* key, uint32_t timeout_ms,
                             const std::string& what) {
  BootstrapCall out;
  out.address = address;
  out.what = what;
  out.socket = wire::Socket::connect(address, timeout_ms, what);
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
    wire::Reader a = call.socket.receive(timeout_ms);
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
  BootstrapCall out = bootstrap_open(address, key, timeout_ms, what);
  bootstrap_request(out, request(out.generation), key, timeout_ms);
  return out;
}

}  // namespace dmrt::verbs
