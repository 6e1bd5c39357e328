// Integer mixing shared by the runtime, the indexes and the bench (one copy of murmur3's fmix64).
#pragma once

#include <cstdint>

namespace dmrt {

// murmur3's fmix64 finalizer: a bijection on 64-bit words with mix64(0) == 0. Used for hashing
// addresses and ids onto tables and rings, and for scattering record numbers over the key space.
constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace dmrt
