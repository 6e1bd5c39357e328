// The lock-release check every transport's tests share: two releases in one batch (lock word last,
// then first) over words that read "held", the bytes read back, the verbs counted.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "dmrt/runtime/client.h"

namespace dmrt::test {

// Releases the 64 bytes at `a` (two 32-byte images) and checks what lands. Returns the counters
// of the release batch alone, for the caller's transport-specific expectations.
template <class C>
VerbCounters check_lock_releases(C& c, GlobalAddress a) {
  const uint64_t held = 0x4000000100000001ull;
  c.write(a + 24, &held, 8);
  c.write(a + 32, &held, 8);
  const VerbCounters before = c.counters().total;
  uint64_t img[4] = {1, 2, 3, 0}, img2[4] = {0, 5, 6, 7}, back[8] = {};
  Batch b;
  b.release(a, img, 32).release(a + 32, img2, 32, LockWord::kFirst);
  c.run(b);
  const VerbCounters d = c.counters().total - before;
  c.read(a, back, 64);
  const uint64_t want[8] = {1, 2, 3, 0, 0, 5, 6, 7};
  EXPECT_EQ(0, std::memcmp(back, want, sizeof want));
  EXPECT_EQ(d.count(VerbKind::kWrite), 2u);
  EXPECT_EQ(d.round_trips + d.local_accesses, 1u);
  return d;
}

}  // namespace dmrt::test
