// Integer mixing shared by the runtime, the indexes and the bench (one copy of murmur3's fmix64).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

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

// A 64-bit hash of a byte string, mix64 over its 8-byte words and its length: for spreading byte
// keys over in-process tables (slots, stripes). Not a remote layout's hash (indexes keep their
// own, e.g. RACE's XXH64 with its seeds), and not for adversarial inputs.
inline uint64_t hash_bytes(std::string_view s) {
  uint64_t h = mix64(0x6279746573ull ^ s.size());
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = mix64(h ^ w) + 0x9e3779b97f4a7c15ull;
  }
  if (i < s.size()) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = mix64(h ^ w) + 0x9e3779b97f4a7c15ull;
  }
  return h;
}

}  // namespace dmrt
