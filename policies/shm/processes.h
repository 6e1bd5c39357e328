// Processes that share one named shm pool: who runs which compute node. (How the compute
// processes of one run meet is bench/group.h, the same on every transport.)
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "policies/shm/pool.h"
#include "runtime/error.h"
#include "runtime/layout.h"
#include "runtime/local_memory.h"

namespace dmrt::shm {

// Whether process `pid` still exists (a process of another user counts: EPERM).
inline bool process_alive(uint64_t pid) {
  if (pid == 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// This process runs compute node `node` of the pool: its pid in the node's claim word
// (layout::kClaimOffset) for as long as the object lives. A second process asking for the same
// node is refused while the first is alive; the claim of a process that died is taken over.
class NodeClaim {
 public:
  NodeClaim(Pool& pool, NodeId node) : word_(pool.region(node).base + layout::kClaimOffset) {
    const uint64_t me = static_cast<uint64_t>(::getpid());
    for (;;) {
      uint64_t held = local::cas(word_, 0, me);
      if (held == 0 || held == me) break;
      if (process_alive(held))
        throw ConfigError("node " + std::to_string(node) + " of pool '" + pool.name() +
                          "' is already run by process " + std::to_string(held) +
                          " (each compute process needs its own --node)");
      if (local::cas(word_, held, me) == held) break;  // its owner died: take it over
    }
  }
  ~NodeClaim() { local::cas(word_, static_cast<uint64_t>(::getpid()), 0); }
  NodeClaim(const NodeClaim&) = delete;
  NodeClaim& operator=(const NodeClaim&) = delete;

 private:
  std::byte* word_;
};

}  // namespace dmrt::shm
