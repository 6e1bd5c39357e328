// sim::EventQueue: pops in (time, push order) exactly, within its ring of buckets and beyond it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "dmrt/policies/sim/event_queue.h"

namespace dmrt::sim {
namespace {

// Pushes and pops in a deterministic pseudo-random mix, each push due up to `spread` ps after the
// last pop (in steps of `grain`, so that many times are equal), and checks every pop against a
// reference that finds the least (time, push number) by brute force.
template <class Q = EventQueue<uint64_t>>
uint64_t check_against_reference(uint64_t steps, uint64_t spread, uint64_t grain) {
  Q q;
  std::vector<std::pair<uint64_t, uint64_t>> ref;  // (time, push number)
  uint64_t x = 0x9E3779B97F4A7C15ull, now = 0, pushes = 0, pops = 0;
  for (uint64_t s = 0; s < steps; ++s) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    // Grow to a few hundred pending events, then drain, in turns.
    const bool push = ref.empty() || (x % 8 < (s / 2000 % 2 ? 3u : 5u));
    if (push) {
      const uint64_t t = now + (x >> 8) % (spread / grain) * grain;  // never before now
      q.push(t, pushes);
      ref.emplace_back(t, pushes);
      ++pushes;
    } else {
      auto it = std::min_element(ref.begin(), ref.end());
      EXPECT_EQ(q.top_time(), it->first);
      EXPECT_EQ(q.top(), it->second);
      uint64_t got = 0;
      const uint64_t t = q.pop(got);
      EXPECT_EQ(t, it->first);
      EXPECT_EQ(got, it->second);
      now = t;
      ref.erase(it);
      ++pops;
    }
    EXPECT_EQ(q.size(), ref.size());
  }
  return pops;
}

// Every event within the ring (8.4 us): mostly appends, with ties and out-of-order pushes.
TEST(SimEventQueue, PopsInTimeThenPushOrderWithinTheRing) {
  EXPECT_EQ(check_against_reference(20000, 2'000'000, 1'000), 9917u);
}

// Events up to 100 us ahead: many wait beyond the ring and move in as it advances; with few
// pending, the ring is often empty and jumps to the earliest of them.
TEST(SimEventQueue, PopsInTimeThenPushOrderBeyondTheRing) {
  EXPECT_EQ(check_against_reference(20000, 100'000'000, 5'000), 9917u);
}

// Events up to 10 ms ahead: beyond the coarse slots too (2.1 ms), through the heap.
TEST(SimEventQueue, PopsInTimeThenPushOrderBeyondTheSlots) {
  EXPECT_EQ(check_against_reference(20000, 10'000'000'000, 50'000), 9917u);
}

// A tiny queue (16 buckets of 16 ps, slots of 4 buckets, 4 slots): every level and every move
// between them is taken many times, with many equal times.
TEST(SimEventQueue, PopsInTimeThenPushOrderInATinyQueue) {
  using Tiny = EventQueue<uint64_t, 4, 16, 2, 4>;
  EXPECT_EQ(check_against_reference<Tiny>(20000, 64, 8), 9917u);
  EXPECT_EQ(check_against_reference<Tiny>(20000, 512, 16), 9917u);
  EXPECT_EQ(check_against_reference<Tiny>(20000, 4096, 16), 9917u);
}

// The ring's first and last buckets: equal times at a bucket boundary, one ring apart.
TEST(SimEventQueue, BucketBoundaries) {
  EventQueue<int> q;
  const uint64_t ring = EventQueue<int>::kBuckets << EventQueue<int>::kShift;
  q.push(ring, 1);
  q.push(8192, 2);
  q.push(ring, 3);
  q.push(8191, 4);
  q.push(2 * ring + 5, 5);
  std::vector<std::pair<uint64_t, int>> got;
  while (!q.empty()) {
    int v = 0;
    const uint64_t t = q.pop(v);
    got.emplace_back(t, v);
  }
  const std::vector<std::pair<uint64_t, int>> want = {
      {8191, 4}, {8192, 2}, {ring, 1}, {ring, 3}, {2 * ring + 5, 5}};
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace dmrt::sim
