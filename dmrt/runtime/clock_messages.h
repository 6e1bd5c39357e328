// Another node's steady clock measured through messages: the request and answer a node program's
// echo service exchanges on mailbox 0, for processes that share memory but no connection (a pool
// on a device that several hosts map). Cristian's method, as verbs::Cluster::clock_offset.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "dmrt/runtime/client.h"
#include "dmrt/runtime/clock_offset.h"
#include "dmrt/runtime/error.h"

namespace dmrt {

// Tags on the echo mailbox (0): a request carries nothing; its answer carries the answering
// node's steady clock (Endpoint::now_ns) and that clock's resolution, two little-endian words.
inline constexpr uint32_t kClockRequestTag = 3;
inline constexpr uint32_t kClockAnswerTag = 4;
inline constexpr size_t kClockAnswerBytes = 16;

// The granularity of CLOCK_MONOTONIC reads here (steady_clock), in ns.
inline uint64_t steady_clock_resolution_ns() {
  timespec res{};
  clock_getres(CLOCK_MONOTONIC, &res);
  return uint64_t(res.tv_sec) * 1'000'000'000u + uint64_t(res.tv_nsec);
}

// The answer's payload, read at the answering node when the request is served.
inline std::vector<std::byte> clock_answer_payload(uint64_t now_ns) {
  const uint64_t words[2] = {now_ns, steady_clock_resolution_ns()};
  std::vector<std::byte> out(kClockAnswerBytes);
  std::memcpy(out.data(), words, kClockAnswerBytes);
  return out;
}

// This client's clock against node `ref`'s (ref = local + offset, within +-bound): `samples`
// request/answer exchanges, the shortest round trip kept (dmrt/runtime/clock_offset.h). The
// node must answer clock requests on mailbox 0; a malformed answer throws TransportError, no
// answer within the client's call timeout too.
template <Transport T>
ClockOffset measure_clock_offset(Client<T>& c, NodeId ref, unsigned samples = 16) {
  const uint64_t local_res = steady_clock_resolution_ns();
  samples = std::max(samples, 1u);
  std::vector<ClockSample> taken;
  taken.reserve(samples);
  for (unsigned i = 0; i < samples; ++i) {
    const uint64_t sent = c.now_ns();
    Message m = c.call(ref, 0, kClockRequestTag, {});
    const uint64_t received = c.now_ns();
    if (m.tag != kClockAnswerTag || m.payload.size() != kClockAnswerBytes)
      throw TransportError("node " + std::to_string(ref) + " answered a clock request with tag " +
                           std::to_string(m.tag) + " and " + std::to_string(m.payload.size()) +
                           " bytes (a node program that answers clock requests: dmrt-node)");
    uint64_t words[2];
    std::memcpy(words, m.payload.data(), kClockAnswerBytes);
    taken.push_back({sent, words[0], received, words[1] + local_res});
  }
  return best_clock_offset(taken);
}

}  // namespace dmrt
