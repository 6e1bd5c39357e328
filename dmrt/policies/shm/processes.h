// Processes that share one named shm pool: who runs which compute node. (How the compute
// processes of one run meet is bench/driver/group.h, the same on every transport.)
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>

#include "dmrt/policies/shm/pool.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"

namespace dmrt::shm {

// Whether process `pid` still exists (a process of another user counts: EPERM).
inline bool process_alive(uint64_t pid) {
  if (pid == 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// This boot of this host's kernel, as 31 bits that are never 0: a hash of
// /proc/sys/kernel/random/boot_id, which differs between two qemu guests even when they share
// one root file system (hostname and machine-id then do not).
inline uint32_t host_tag() {
  static const uint32_t tag = [] {
    char id[64] = {};
    if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "re")) {
      if (!std::fgets(id, sizeof id, f)) id[0] = '\0';
      std::fclose(f);
    }
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
    for (const char* c = id; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ull;
    const auto t = static_cast<uint32_t>((h ^ (h >> 32)) & 0x7fffffff);
    return t ? t : 1u;
  }();
  return tag;
}

// This process runs compute node `node` of the pool: its pid in the node's claim word
// (layout::kClaimOffset) for as long as the object lives. A second process asking for the same
// node is refused while the first is alive; the claim of a process that died is taken over.
// On a pool that may span hosts (Pool::polling_waits) the word holds host_tag() << 32 | pid: a
// claim of this host is checked as above; one of another host, whose process no kill(2) from
// here can see, is refused (after a crash there, create the pool again).
class NodeClaim {
 public:
  NodeClaim(Pool& pool, NodeId node)
      : word_(pool.region(node).base + layout::kClaimOffset),
        me_(static_cast<uint64_t>(::getpid()) |
            (pool.polling_waits() ? uint64_t{host_tag()} << 32 : 0)) {
    for (;;) {
      uint64_t held = local::cas(word_, 0, me_);
      if (held == 0 || held == me_) break;
      const uint32_t tag = static_cast<uint32_t>(held >> 32);
      if (tag != 0 && tag != host_tag())
        throw ConfigError("node " + std::to_string(node) + " of pool '" + pool.name() +
                          "' is already run by process " + std::to_string(held & 0xffffffff) +
                          " on another host (each compute process needs its own --node; a "
                          "claim left by a crash on another host goes when the pool is created "
                          "again)");
      if (process_alive(held & 0xffffffff))
        throw ConfigError("node " + std::to_string(node) + " of pool '" + pool.name() +
                          "' is already run by process " + std::to_string(held & 0xffffffff) +
                          " (each compute process needs its own --node)");
      if (local::cas(word_, held, me_) == held) break;  // its owner died: take it over
    }
  }
  ~NodeClaim() { local::cas(word_, me_, 0); }
  NodeClaim(const NodeClaim&) = delete;
  NodeClaim& operator=(const NodeClaim&) = delete;

 private:
  std::byte* word_;
  uint64_t me_;  // what this process writes into the claim word
};

}  // namespace dmrt::shm
