// Byte-string keys: their order, their limits, and the integer key's byte form.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "dmrt/runtime/kv.h"

namespace dmrt {

// A byte-string key is 1 to kMaxKeyBytes bytes, ordered lexicographically as unsigned bytes (a
// proper prefix sorts first: std::string_view's own order, since char_traits<char> compares as
// unsigned char). An index takes keys up to its configured `key_size`; 8, every index's default,
// keeps the integer fast path. The integer key k and key_bytes(k), its 8 bytes big-endian, are
// the same key in either mode, so numeric order is byte order.
using KeyView = std::string_view;
inline constexpr size_t kMaxKeyBytes = 1024;
inline constexpr size_t kIntegerKeyBytes = 8;

// k as 8 bytes, big-endian, into out[0..8).
inline void put_key_bytes(Key k, char* out) {
  if constexpr (std::endian::native == std::endian::little) k = __builtin_bswap64(k);
  std::memcpy(out, &k, 8);
}
inline std::string key_bytes(Key k) {
  std::string s(8, '\0');
  put_key_bytes(k, s.data());
  return s;
}
// The integer key of an 8-byte key (precondition: k.size() == 8).
inline Key key_of_bytes(KeyView k) {
  Key v;
  std::memcpy(&v, k.data(), 8);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
  return v;
}

}  // namespace dmrt
