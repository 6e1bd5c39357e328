// XXH64 (xxHash's 64-bit hash) compiled into the caller: the hashes of libxxhash's XXH64, bit for
// bit, with a constant length (an 8-byte key, a 64-byte block) folded in at compile time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dmrt {

// RACE and HStore hash each operation's key two or three times and check a block or record.
// Through the library's exported XXH64 a hash of 8 bytes cost about 120 instructions, most of it
// the length dispatch (callgrind of a RACE search on shm, docs/results.md, issue 20), and GCC did
// not inline xxhash.h's own XXH_INLINE_ALL version either. This is the same algorithm (the
// xxHash specification: four lanes over 32-byte stripes, then 8-, 4- and 1-byte steps, then the
// avalanche), always inlined; tests/race compares it with libxxhash on lengths 0 to 200.
namespace xxh64_detail {
inline constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full,
                          kP3 = 0x165667B19E3779F9ull, kP4 = 0x85EBCA77C2B2AE63ull,
                          kP5 = 0x27D4EB2F165667C5ull;
[[gnu::always_inline]] inline uint64_t rotl(uint64_t x, unsigned r) {
  return (x << r) | (x >> (64 - r));
}
[[gnu::always_inline]] inline uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian hosts (x86-64, aarch64 as configured here)
}
[[gnu::always_inline]] inline uint64_t load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
[[gnu::always_inline]] inline uint64_t round(uint64_t acc, uint64_t in) {
  return rotl(acc + in * kP2, 31) * kP1;
}
[[gnu::always_inline]] inline uint64_t merge(uint64_t h, uint64_t v) {
  return (h ^ round(0, v)) * kP1 + kP4;
}
}  // namespace xxh64_detail

[[gnu::always_inline]] inline uint64_t xxh64(const void* data, size_t len, uint64_t seed) {
  using namespace xxh64_detail;
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + len;
  uint64_t h;
  if (len >= 32) {
    uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    const unsigned char* const last = end - 32;
    do {
      v1 = round(v1, load64(p));
      v2 = round(v2, load64(p + 8));
      v3 = round(v3, load64(p + 16));
      v4 = round(v4, load64(p + 24));
      p += 32;
    } while (p <= last);
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(h, v1);
    h = merge(h, v2);
    h = merge(h, v3);
    h = merge(h, v4);
  } else {
    h = seed + kP5;
  }
  h += len;
  for (; end - p >= 8; p += 8) h = rotl(h ^ round(0, load64(p)), 27) * kP1 + kP4;
  if (end - p >= 4) {
    h = rotl(h ^ (load32(p) * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p) h = rotl(h ^ (*p * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

}  // namespace dmrt
