// Where a process runs and where memory lies: CPU and NUMA binding of this process and its
// threads (--cpus, --numa-node), and which NUMA node holds the pages of a mapping.
#pragma once

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "dmrt/runtime/error.h"

#ifdef DMRT_HAVE_NUMA
#include <numa.h>
#include <numaif.h>
#endif

namespace dmrt::placement {

// NUMA nodes of this host (1 without libnuma or without NUMA support).
inline int host_numa_nodes() {
#ifdef DMRT_HAVE_NUMA
  if (numa_available() >= 0) return numa_max_node() + 1;
#endif
  return 1;
}

// "0-3,6,8-9" -> {0,1,2,3,6,8,9}; throws ConfigError naming the bad part.
inline std::vector<int> parse_cpu_list(const std::string& s) {
  std::vector<int> out;
  size_t i = 0;
  auto number = [&](size_t& p) {
    size_t start = p;
    long v = 0;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9' && v < 1'000'000) v = v * 10 + (s[p++] - '0');
    if (p == start || v >= CPU_SETSIZE)
      throw ConfigError("--cpus '" + s + "': expected CPU numbers below " +
                        std::to_string(CPU_SETSIZE) + " as a list such as 0-3,6");
    return static_cast<int>(v);
  };
  while (i < s.size()) {
    int a = number(i), b = a;
    if (i < s.size() && s[i] == '-') b = number(++i);
    if (b < a)
      throw ConfigError("--cpus '" + s + "': range " + std::to_string(a) + "-" + std::to_string(b) +
                        " runs backwards");
    for (int c = a; c <= b; ++c) out.push_back(c);
    if (i < s.size() && s[i++] != ',')
      throw ConfigError("--cpus '" + s + "': expected ',' between CPUs or ranges");
  }
  if (out.empty()) throw ConfigError("--cpus needs at least one CPU");
  return out;
}

// The CPUs this thread may run on.
inline std::vector<int> current_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

// Binds the calling thread to `cpus` (threads it starts later inherit it).
inline void bind_thread(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw ConfigError("cannot bind to CPUs (sched_setaffinity): " +
                      std::string(std::strerror(errno)) + " (are they online and allowed?)");
}

// Runs the calling thread (and threads it starts later) on NUMA node `node`'s CPUs and allocates
// its memory there first (numa_run_on_node, numa_set_preferred).
inline void bind_numa(int node) {
#ifdef DMRT_HAVE_NUMA
  if (numa_available() < 0 || node > numa_max_node() || node < 0)
    throw ConfigError("--numa-node " + std::to_string(node) + ": this host has NUMA nodes 0.." +
                      std::to_string(host_numa_nodes() - 1));
  if (numa_run_on_node(node) != 0)
    throw ConfigError("cannot run on NUMA node " + std::to_string(node) + ": " +
                      std::strerror(errno));
  numa_set_preferred(node);
#else
  (void)node;
  throw ConfigError("--numa-node needs a dmrt built with libnuma");
#endif
}

// Where the resident pages of [base, base + bytes) are: pages per NUMA node, and pages not yet
// touched (no node). At most `max_pages` pages, spread evenly over the range, are asked about
// (move_pages with no target nodes reports each page's node).
struct PageNodes {
  std::map<int, uint64_t> pages;  // NUMA node -> pages sampled there
  uint64_t absent = 0;            // sampled pages that are not resident
  uint64_t sampled = 0;
  bool available = false;  // false: this build or host cannot tell
};

inline PageNodes page_nodes(const std::byte* base, uint64_t bytes, uint64_t max_pages = 4096) {
  PageNodes out;
#ifdef DMRT_HAVE_NUMA
  if (numa_available() < 0 || bytes == 0) return out;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t total = (bytes + page - 1) / page;
  const uint64_t n = total < max_pages ? total : max_pages;
  std::vector<void*> pages(n);
  std::vector<int> status(n, 0);
  for (uint64_t i = 0; i < n; ++i) pages[i] = const_cast<std::byte*>(base) + (total * i / n) * page;
  if (move_pages(0, n, pages.data(), nullptr, status.data(), 0) != 0) return out;
  out.available = true;
  out.sampled = n;
  for (int s : status) {
    if (s >= 0)
      ++out.pages[s];
    else
      ++out.absent;
  }
#else
  (void)base;
  (void)bytes;
  (void)max_pages;
#endif
  return out;
}

}  // namespace dmrt::placement
