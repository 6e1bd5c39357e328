// dmrt-bench's byte-string keys (--key-size B > 8, --key-format): an order-preserving, decodable
// encoding of the integer key the workload draws, so that histories, the checker and the key
// choosers keep working on integers while the index sees keys of exactly B bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::bench {

// user   : "user" + the key's 20-digit zero-padded decimal (YCSB's `user<number>` keys, padded
//          so that byte order is numeric order), then B - 24 filler letters derived from the key.
//          Needs B >= 24.
// random : the key's 8 bytes big-endian (byte order is numeric order), then B - 8 pseudo-random
//          bytes derived from the key, any value 0x00..0xff. Needs B >= 8.
// Both are functions of the key alone, so every client encodes a key to the same bytes, and
// decode() rejects any byte string that is not exactly encode() of some key (a truncated or
// corrupted key in a scan row is caught, not misread).
enum class KeyFormat { kUser, kRandom };

inline constexpr size_t kUserKeyDigits = 20;  // 2^64 - 1 has 20 decimal digits
inline constexpr size_t kUserKeyMin = 4 + kUserKeyDigits;

constexpr std::string_view to_string(KeyFormat f) {
  return f == KeyFormat::kUser ? "user" : "random";
}
inline std::optional<KeyFormat> parse_key_format(std::string_view s) {
  if (s == "user") return KeyFormat::kUser;
  if (s == "random") return KeyFormat::kRandom;
  return std::nullopt;
}

// The smallest key size a format can encode every 64-bit key in.
constexpr size_t min_key_size(KeyFormat f) {
  return f == KeyFormat::kUser ? kUserKeyMin : kIntegerKeyBytes;
}

class KeyCodec {
 public:
  // Precondition: min_key_size(format) <= size <= kMaxKeyBytes (the bench checks it up front).
  KeyCodec(size_t size, KeyFormat format) : size_(size), format_(format) {}

  size_t size() const { return size_; }
  KeyFormat format() const { return format_; }

  // Writes the key's size() bytes to out[0..size()).
  void encode(Key k, char* out) const {
    size_t head;
    if (format_ == KeyFormat::kUser) {
      out[0] = 'u', out[1] = 's', out[2] = 'e', out[3] = 'r';
      Key v = k;
      for (size_t i = kUserKeyDigits; i > 0; --i, v /= 10)
        out[3 + i] = static_cast<char>('0' + v % 10);
      head = kUserKeyMin;
    } else {
      put_key_bytes(k, out);
      head = kIntegerKeyBytes;
    }
    fill_tail(k, out + head, 0, size_ - head);
  }
  // Into `out`, whose capacity is reused (no allocation once it has grown to size()).
  void encode(Key k, std::string& out) const {
    out.resize(size_);
    encode(k, out.data());
  }
  std::string encode(Key k) const {
    std::string s;
    encode(k, s);
    return s;
  }

  // The key whose encoding `bytes` is; nullopt when it is no key's.
  std::optional<Key> decode(std::string_view bytes) const {
    if (bytes.size() != size_) return std::nullopt;
    Key k = 0;
    size_t head;
    if (format_ == KeyFormat::kUser) {
      if (bytes.substr(0, 4) != "user") return std::nullopt;
      unsigned __int128 v = 0;
      for (size_t i = 0; i < kUserKeyDigits; ++i) {
        const char c = bytes[4 + i];
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<unsigned>(c - '0');
      }
      if (v > ~Key{0}) return std::nullopt;
      k = static_cast<Key>(v);
      head = kUserKeyMin;
    } else {
      k = key_of_bytes(bytes);
      head = kIntegerKeyBytes;
    }
    // The tail must be the key's own: compare it chunk by chunk without building a string.
    char chunk[64];
    for (size_t off = head; off < size_; off += sizeof chunk) {
      const size_t n = std::min(sizeof chunk, size_ - off);
      fill_tail(k, chunk, off - head, n);
      if (bytes.substr(off, n) != std::string_view(chunk, n)) return std::nullopt;
    }
    return k;
  }

 private:
  // The key's tail bytes [from, from + n) (the tail starts after the order-giving head): a
  // splitmix64 stream seeded by the key, one 64-bit word per 8 bytes.
  void fill_tail(Key k, char* out, size_t from, size_t n) const {
    const bool letters = format_ == KeyFormat::kUser;
    size_t i = 0;
    while (i < n) {
      const size_t at = from + i;
      uint64_t word = mix(k, at / 8) >> (8 * (at % 8));
      for (size_t b = at % 8; b < 8 && i < n; ++b, ++i, word >>= 8) {
        const auto byte = static_cast<uint8_t>(word);
        out[i] = letters ? static_cast<char>('a' + byte % 26) : static_cast<char>(byte);
      }
    }
  }
  static uint64_t mix(Key k, uint64_t step) {
    uint64_t z = k * 0x9e3779b97f4a7c15ull + (step + 1) * 0xd1b54a32d192ed03ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  size_t size_;
  KeyFormat format_;
};

}  // namespace dmrt::bench
