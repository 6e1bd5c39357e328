// dmrt-node's request/response echo service on mailbox 0: a request with tag 1 is answered with
// tag 2 and the same payload, anything else with an empty tag-0 reply. A malformed message or a
// reply that cannot be delivered is counted and skipped; it never stops the node.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "runtime/address.h"

namespace dmrt::verbs {

class Cluster;

inline constexpr uint32_t kEchoTag = 1;  // request: payload; reply tag 2: the same payload

struct EchoStats {
  std::atomic<uint64_t> answered{0};
  std::atomic<uint64_t> bad_messages{0};  // malformed, or their reply could not be sent
  std::mutex mu;
  std::string last_error;  // the most recent bad message's error, for the node's log
};

// Serves on the calling OS thread (bound to client-thread slot `slot` of `cluster`) until
// `stop()` returns true.
void run_echo_service(Cluster& cluster, unsigned slot, const std::function<bool()>& stop,
                      EchoStats& stats);

}  // namespace dmrt::verbs
