// Sealed objects: a meta word carrying a 32-bit checksum over the object, so a torn read is caught.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dmrt/runtime/hash.h"

namespace dmrt::sealed {

// Why a checksum and not only cache-line versions: every transport here (RDMA, CXL, shm) only
// promises 8-byte atomicity, and an RDMA READ does not promise any order inside itself. Per-line
// version bytes then cannot prove that the data *between* two version bytes belongs to the same
// write. A checksum over the whole object (meta + payload) does: a read that mixes words of two
// different writes fails it (except with probability 2^-32). The meta word also carries the
// node-level version (nv), so an object read in a node that was rewritten meanwhile is caught by
// comparing nv across all objects of one read.
//
// Meta word: [checksum:32 | aux:32], aux = nv:8 | flags:8 | extra:16 (extra = hop bitmap in CHIME).
struct Meta {
  uint8_t nv = 0;
  uint8_t flags = 0;
  uint16_t extra = 0;
  uint32_t aux() const { return uint32_t{nv} | uint32_t{flags} << 8 | uint32_t{extra} << 16; }
  static Meta from_aux(uint32_t a) {
    return {static_cast<uint8_t>(a), static_cast<uint8_t>(a >> 8), static_cast<uint16_t>(a >> 16)};
  }
};

inline uint32_t object_checksum(uint32_t aux, const uint64_t* payload, size_t words) {
  uint64_t h = mix64(0x9e3779b97f4a7c15ull ^ aux);
  for (size_t i = 0; i < words; ++i) h = mix64(h ^ (payload[i] + 0x632be59bd9b4e019ull * (i + 1)));
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// obj[0] = meta word, obj[1..1+payload_words) = payload.
inline void seal(uint64_t* obj, size_t payload_words, Meta m) {
  uint32_t aux = m.aux();
  obj[0] = uint64_t{aux} << 32 | object_checksum(aux, obj + 1, payload_words);
}
inline bool verify(const uint64_t* obj, size_t payload_words) {
  uint32_t aux = static_cast<uint32_t>(obj[0] >> 32);
  return static_cast<uint32_t>(obj[0]) == object_checksum(aux, obj + 1, payload_words);
}
inline Meta meta_of(const uint64_t* obj) {
  return Meta::from_aux(static_cast<uint32_t>(obj[0] >> 32));
}

}  // namespace dmrt::sealed
