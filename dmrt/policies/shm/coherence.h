// What a correct port to non-coherent shared CXL memory pays per round trip: cache-line flushes
// and fences around the verbs (the shm coherence mode; docs/cxl-porting.md).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dmrt/runtime/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace dmrt::shm {

// CXL 2.0 memory pooled between hosts is not kept coherent across them: a host may hold a stale
// copy of a line another host wrote, and its own stores may sit in its cache where the others
// cannot see them. A port that stays correct there must, around every access to shared memory:
//   - before a READ (and an atomic): invalidate the lines, so that the load misses and fetches
//     what memory holds now (clflushopt; then a full fence, so no load passes the flushes);
//   - after a WRITE (and an atomic): write the lines back to memory (clwb), and fence (sfence)
//     before the round trip counts as complete, so that what the index does next (an unlock, a
//     pointer swing) cannot become visible before the data it publishes.
// kFlush issues exactly those instructions around each verb that leaves the client's own node.
// On one host the caches are coherent anyway: the mode costs what a port would cost and never
// changes a result (the linearizability harness checks every index with it). Atomics are a
// separate problem that no instruction sequence solves (a locked instruction on a line another
// host caches is not atomic across hosts); the study says what each index needs there.
enum class Coherence : uint8_t { kNone, kFlush };

constexpr std::string_view coherence_name(Coherence c) {
  return c == Coherence::kFlush ? "flush" : "none";
}

inline Coherence parse_coherence(std::string_view s) {
  if (s == "none") return Coherence::kNone;
  if (s == "flush") return Coherence::kFlush;
  throw ConfigError("unknown shm coherence '" + std::string(s) + "' (choices: none, flush)");
}

// The instructions this CPU has (CPUID leaf 7): clflushopt and clwb where present, else the
// older, serialising clflush for both (which also evicts the line on write-back).
struct FlushInstructions {
  bool clflushopt = false;
  bool clwb = false;

  static FlushInstructions detect() {
    FlushInstructions f;
#if defined(__x86_64__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
      f.clflushopt = (b >> 23) & 1;
      f.clwb = (b >> 24) & 1;
    }
#endif
    return f;
  }

  // The instructions the mode issues, as the JSON reports them.
  std::string describe() const {
#if defined(__x86_64__)
    std::string inval = clflushopt ? "clflushopt" : "clflush";
    std::string wb = clwb ? "clwb" : inval;
    return inval + " before reads, " + wb + " after writes, mfence/sfence";
#else
    return "fences only (no cache-line flush instructions on this architecture)";
#endif
  }
};

// Lines invalidated and written back so far, for the bench's per-operation figures. Sharded by
// client so that counting does not add a contended line to every round trip.
class CoherenceStats {
 public:
  void add(uint32_t client, uint64_t invalidated, uint64_t written_back) {
    Shard& s = shards_[client % kShards];
    s.invalidated.fetch_add(invalidated, std::memory_order_relaxed);
    s.written_back.fetch_add(written_back, std::memory_order_relaxed);
  }
  uint64_t invalidated() const { return sum(&Shard::invalidated); }
  uint64_t written_back() const { return sum(&Shard::written_back); }

 private:
  static constexpr unsigned kShards = 64;
  struct alignas(64) Shard {
    std::atomic<uint64_t> invalidated{0}, written_back{0};
  };
  uint64_t sum(std::atomic<uint64_t> Shard::*f) const {
    uint64_t n = 0;
    for (const Shard& s : shards_) n += (s.*f).load(std::memory_order_relaxed);
    return n;
  }
  Shard shards_[kShards];
};

// The cache lines [p, p + len) spans.
inline uint64_t lines_spanned(const std::byte* p, uint64_t len) {
  if (len == 0) return 0;
  const auto a = reinterpret_cast<uintptr_t>(p);
  return ((a + len - 1) >> 6) - (a >> 6) + 1;
}

// Calls f(line) for each cache line [p, p + len) spans; returns their number.
template <class F>
inline uint64_t for_each_line(const std::byte* p, uint64_t len, F&& f) {
  const uint64_t n = lines_spanned(p, len);
  auto a = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
  for (uint64_t i = 0; i < n; ++i, a += 64) f(reinterpret_cast<char*>(a));
  return n;
}

// Invalidates the lines of [p, p + len) in this host's caches (a dirty line is written back
// first). Returns the number of lines. Order it before later loads with load_fence().
inline uint64_t invalidate_lines(const std::byte* p, uint64_t len, const FlushInstructions& f) {
  return for_each_line(p, len, [&](char* line) {
#if defined(__x86_64__)
    if (f.clflushopt)
      asm volatile("clflushopt %0" : "+m"(*line));
    else
      asm volatile("clflush %0" : "+m"(*line));
#else
    (void)f;
    (void)line;
#endif
  });
}

// Writes the lines of [p, p + len) back to memory, keeping them cached where clwb exists.
// Returns the number of lines. Order it before later stores with store_fence().
inline uint64_t write_back_lines(const std::byte* p, uint64_t len, const FlushInstructions& f) {
  return for_each_line(p, len, [&](char* line) {
#if defined(__x86_64__)
    if (f.clwb)
      asm volatile("clwb %0" : "+m"(*line));
    else if (f.clflushopt)
      asm volatile("clflushopt %0" : "+m"(*line));
    else
      asm volatile("clflush %0" : "+m"(*line));
#else
    (void)f;
    (void)line;
#endif
  });
}

// No later load runs before the invalidations issued so far have completed.
inline void load_fence() {
#if defined(__x86_64__)
  asm volatile("mfence" ::: "memory");
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// The write-backs issued so far complete before any later store.
inline void store_fence() {
#if defined(__x86_64__)
  asm volatile("sfence" ::: "memory");
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace dmrt::shm
