// How an shm round trip executes: inline, or prefetch-then-yield (memory-level parallelism).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dmrt/runtime/error.h"

namespace dmrt::shm {

// kInline performs the verbs at once: the thread stalls on each DRAM miss of the batch, one
// after the other when they depend on each other (pointer chasing across round trips), and the
// other fibers of the thread wait. kPrefetch first issues a prefetch for every cache line the
// round trip touches, yields to the next ready fiber, and performs the verbs when it runs again:
// with F fibers per thread up to F round trips' misses are in flight at once, as F outstanding
// RDMA verbs or CXL loads would be. The verbs themselves, their order and their atomicity are the
// same in both modes; only when the fiber gives up the CPU differs.
enum class Execution : uint8_t { kInline, kPrefetch };

constexpr std::string_view execution_name(Execution e) {
  return e == Execution::kPrefetch ? "prefetch" : "inline";
}

inline Execution parse_execution(std::string_view s) {
  if (s == "inline") return Execution::kInline;
  if (s == "prefetch") return Execution::kPrefetch;
  throw ConfigError("unknown shm mode '" + std::string(s) + "' (choices: inline, prefetch)");
}

// Lines one round trip prefetches at most. Beyond a few KiB the hardware's stream prefetcher
// follows a long READ on its own, and the line-fill buffers (about 16 per core) are full anyway.
inline constexpr unsigned kPrefetchLinesPerRoundTrip = 64;

// Prefetches the lines of [p, p + len), for writing when `write` (a WRITE or an atomic: the line
// is then fetched exclusive, as the store or the locked instruction will need it), while `budget`
// lines remain; decrements it.
inline void prefetch_range(const std::byte* p, uint64_t len, bool write, unsigned& budget) {
  auto a = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + len;
  for (; a < end && budget > 0; a += 64, --budget) {
    const auto* line = reinterpret_cast<const char*>(a);
    if (write) {
#if defined(__x86_64__)
      // GCC emits prefetchw for __builtin_prefetch(p, 1) only with -mprfchw; every x86-64 CPU
      // since Broadwell executes it (older ones treat it as a no-op hint).
      asm volatile("prefetchw %0" : : "m"(*line));
#else
      __builtin_prefetch(line, 1, 3);
#endif
    } else {
      __builtin_prefetch(line, 0, 3);
    }
  }
}

}  // namespace dmrt::shm
