// The bootstrap client: one authenticated request/reply exchange with a node's server.
#include "policies/verbs/bootstrap_conn.h"
#include "runtime/error.h"

namespace dmrt::verbs {

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
