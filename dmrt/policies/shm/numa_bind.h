// Binds a shm pool's mapping to one NUMA node (mbind, MPOL_BIND), with errors that say why not.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "dmrt/runtime/error.h"

#ifdef DMRT_HAVE_NUMA
#include <numa.h>
#include <numaif.h>
#endif

namespace dmrt::shm {

// Pages of [base, base + bytes) that are not there yet come from `node` only; `what` names the
// memory in errors ("node 2's region"). A node the machine lacks is a ConfigError, and so is a
// build without libnuma; a failing mbind is an Error naming errno.
inline void bind_to_numa_node(std::byte* base, uint64_t bytes, int node, const std::string& what) {
#ifdef DMRT_HAVE_NUMA
  if (numa_available() < 0 || node < 0 || node > numa_max_node())
    throw ConfigError(what + " asks for NUMA node " + std::to_string(node) +
                      ", which this machine does not have");
  unsigned long mask[16] = {};  // 1024 nodes
  mask[node / 64] = 1ul << (node % 64);
  if (mbind(base, bytes, MPOL_BIND, mask, 1024, 0) != 0)
    throw Error("mbind of " + what + " to NUMA node " + std::to_string(node) +
                " failed: " + std::strerror(errno));
#else
  (void)base;
  (void)bytes;
  (void)node;
  throw ConfigError(what + " asks for NUMA placement, but dmrt was built without libnuma");
#endif
}

}  // namespace dmrt::shm
