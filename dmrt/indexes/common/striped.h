// Per-thread stripes for compute-side state every search writes: counters and reader counts that
// one shared word would bounce between the threads' caches on each operation.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dmrt::btree {

inline constexpr size_t kStripes = 16;

// This thread's stripe: threads are numbered in the order they first ask, so up to kStripes
// threads of a process never share one.
inline size_t thread_stripe() {
  static std::atomic<size_t> next{0};
  thread_local const size_t mine = next.fetch_add(1, std::memory_order_relaxed) % kStripes;
  return mine;
}

// A statistics counter: each thread adds to its own cache line; load() sums the stripes (exact
// once the adders are done, a snapshot while they run, as a relaxed atomic's would be).
class StripedCounter {
 public:
  void fetch_add(uint64_t n, std::memory_order o = std::memory_order_relaxed) {
    s_[thread_stripe()].v.fetch_add(n, o);
  }
  uint64_t load(std::memory_order o = std::memory_order_relaxed) const {
    uint64_t sum = 0;
    for (const Line& l : s_) sum += l.v.load(o);
    return sum;
  }

 private:
  struct alignas(64) Line {
    std::atomic<uint64_t> v{0};
  };
  std::array<Line, kStripes> s_{};
};

}  // namespace dmrt::btree
