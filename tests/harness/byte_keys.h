// Byte-string keys for tests (no GoogleTest here, so the fuzzer can use them too): a pool of keys
// that exercises byte-key order (dmrt/runtime/key_bytes.h), and a printable form of a key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dmrt/runtime/key_bytes.h"

namespace dmrt::harness {

// The printable form of a key for failure messages: bytes outside [0x21, 0x7e] as \xHH
inline std::string show_key(std::string_view k) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = std::to_string(k.size()) + "B \"";
  for (size_t i = 0; i < k.size() && i < 80; ++i) {
    const auto b = static_cast<uint8_t>(k[i]);
    if (b > 0x20 && b < 0x7f && b != '\\') {
      s += static_cast<char>(b);
    } else {
      s += "\\x";
      s += kHex[b >> 4];
      s += kHex[b & 15];
    }
  }
  return s + (k.size() > 80 ? "...\"" : "\"");
}

// A pool of distinct keys of 1..key_size bytes (exactly 8 at key_size 8, without 2^64 - 1) that
// exercises byte-key order: every length, chains of prefixes, long shared prefixes, 0x00/0xff
// bytes, and random keys over a small alphabet (so that random keys share prefixes too). Sorted.
inline std::vector<std::string> byte_key_pool(size_t key_size, size_t n, uint64_t seed) {
  const size_t min_len = key_size == kIntegerKeyBytes ? kIntegerKeyBytes : 1;
  std::mt19937_64 rng(seed);
  std::set<std::string> keys;
  auto add = [&](std::string k) {
    if (k.size() < min_len) k.resize(min_len, '\x00');
    if (k.size() > key_size) k.resize(key_size);
    // At key_size 8 the keys are integers, and 2^64 - 1 is a sentinel of some integer indexes.
    if (key_size == kIntegerKeyBytes && k == std::string(kIntegerKeyBytes, '\xff')) return;
    keys.insert(std::move(k));
  };
  // A chain of prefixes of one root key, every length.
  std::string root(key_size, '\0');
  for (char& ch : root) ch = static_cast<char>(rng());
  for (size_t len = min_len; len <= key_size; ++len) add(root.substr(0, len));
  // Long shared prefixes: "user" + 20 digits, the last ones differing (then letters).
  for (uint64_t i = 1; i <= 16; ++i) {
    std::string d = std::to_string(i);
    std::string k = "user" + std::string(20 - d.size(), '0') + d;
    if (key_size >= k.size()) k.append(key_size - k.size(), 'x');
    add(key_size >= 24 ? k : k.substr(k.size() - key_size));  // short keys: the digits' end
  }
  // 0x00 and 0xff: all-zero and all-0xff keys of several lengths, and mixed.
  for (size_t len : {size_t{1}, size_t{2}, size_t{3}, key_size / 2, key_size - 1, key_size}) {
    if (len < 1) continue;
    add(std::string(len, '\x00'));
    add(std::string(len, '\xff'));
    std::string mixed(len, '\x00');
    for (size_t i = 0; i < len; i += 2) mixed[i] = '\xff';
    add(mixed);
  }
  add(std::string("a\0b", 3));
  add(std::string("a\0", 2));
  add("a");
  add("a\xff");
  // Random keys over a small alphabet, random lengths.
  static constexpr char kAlphabet[] = {'\x00', '\x01', 'a', 'b', '\x7f', '\x80', '\xfe', '\xff'};
  while (keys.size() < n) {
    const size_t len = std::uniform_int_distribution<size_t>(min_len, key_size)(rng);
    std::string k(len, '\0');
    for (char& ch : k) ch = kAlphabet[rng() % sizeof kAlphabet];
    add(std::move(k));
  }
  return {keys.begin(), keys.end()};
}

}  // namespace dmrt::harness
