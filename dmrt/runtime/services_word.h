// What a compute node learns from a memory node's services word: the services its node program
// runs.
#pragma once

#include <cstdint>
#include <string>

#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"

namespace dmrt {

// The services word of `node` (one bit per ServiceInfo::bit), once its node program has published
// it (layout::kServicesReady). A node program serves its region before its services have started,
// so a compute node that connects early polls (every millisecond of the client's clock, pausing in
// between so that other fibers run) for at most `patience_ns`, then throws a TransportError that
// names the node. Only for nodes served by a node program (tools/dmrt-node): nothing else sets the
// ready bit.
template <Transport T>
uint64_t await_services(Client<T>& c, NodeId node, uint64_t patience_ns = 30'000'000'000) {
  const uint64_t start = c.now_ns();
  for (uint64_t last = start;;) {
    uint64_t word = c.template read_value<uint64_t>(layout::services_word(node));
    if (word & layout::kServicesReady) return word & ~layout::kServicesReady;
    if (c.now_ns() - start > patience_ns)
      throw TransportError("memory node " + std::to_string(node) +
                           " has not published its services after " +
                           std::to_string(patience_ns / 1000000) +
                           " ms (is it a dmrt-node that is still starting, or a stuck one?)");
    while (c.now_ns() - last < 1000000) c.pause();
    last = c.now_ns();
  }
}

}  // namespace dmrt
