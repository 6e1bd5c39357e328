// Fixed-size value slots of the tree and learned leaves: a value of up to value_size bytes kept in
// whole 8-byte words, zero-padded (the tree indexes store values inline, as their papers do).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace dmrt::btree {

// Values are fixed-size (Options::value_size) byte strings stored in whole words.
inline uint32_t value_words(uint32_t value_size) {
  return (value_size + 7) / 8;
}
inline void store_value(uint64_t* dst, std::string_view v, uint32_t value_size) {
  std::memset(dst, 0, value_words(value_size) * 8);
  std::memcpy(dst, v.data(), v.size() < value_size ? v.size() : value_size);
}
inline void load_value(const uint64_t* src, uint32_t value_size, std::string& out) {
  out.assign(reinterpret_cast<const char*>(src), value_size);
}

}  // namespace dmrt::btree
