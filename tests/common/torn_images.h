// Torn READs of a node for the synchronization tests: the images a reader can assemble from pieces
// of the bytes before and after one write, and the check that only the whole ones are accepted.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace dmrt::test {

// A node's bytes before and after one write (an index's test fills them).
struct TornImages {
  std::vector<uint8_t> before, after;

  // `before` with the grain-byte pieces that take_after(piece) chooses copied from `after`.
  template <class Pick>
  std::vector<uint8_t> mix(size_t grain, Pick take_after) const {
    std::vector<uint8_t> m = before;
    for (size_t p = 0; p * grain < m.size(); ++p)
      if (take_after(p))
        for (size_t b = p * grain; b < std::min(m.size(), (p + 1) * grain); ++b) m[b] = after[b];
    return m;
  }
};

// accepts(image) must hold for `before` and `after` and for no other image made of grain-byte
// pieces of them: a cut at every piece in both orders, then 500 random subsets (from `seed`).
// Returns how many of the images checked were torn.
template <class Accepts>
size_t expect_only_whole_images_accepted(const TornImages& im, size_t grain, uint64_t seed,
                                         Accepts accepts) {
  EXPECT_TRUE(accepts(im.before));
  EXPECT_TRUE(accepts(im.after));
  const size_t pieces = (im.before.size() + grain - 1) / grain;
  size_t torn = 0;
  auto check = [&](const std::vector<uint8_t>& m) {
    bool whole = m == im.before || m == im.after;
    torn += !whole;
    EXPECT_EQ(accepts(m), whole);
  };
  for (size_t cut = 1; cut < pieces; ++cut) {
    check(im.mix(grain, [&](size_t p) { return p >= cut; }));
    check(im.mix(grain, [&](size_t p) { return p < cut; }));
  }
  std::mt19937_64 rng(seed);
  for (int r = 0; r < 500; ++r) {
    uint64_t bits = rng();
    check(im.mix(grain, [&](size_t p) { return (bits >> (p % 64)) & 1; }));
  }
  return torn;
}

}  // namespace dmrt::test
