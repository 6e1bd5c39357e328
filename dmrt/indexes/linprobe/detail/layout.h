// linprobe's remote formats: the table's lines, the slot word and the KV block with its checksum.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "dmrt/indexes/common/xxh64.h"
#include "dmrt/runtime/address.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::linprobe {

// Table: a 64 B meta line (config words, checked by attach), then buckets + window - 1 buckets,
// so that a key's window never wraps: one READ from its home bucket.
// Bucket (64 B): word 0 locks the inserts of the keys whose home it is, words 1-7 are slots.
inline constexpr uint32_t kBucketBytes = 64;
inline constexpr uint32_t kSlotsPerBucket = 7;
inline constexpr uint64_t kMagic = 0x4c494e50524f4245ull;  // "LINPROBE"

struct Meta {
  uint64_t magic = kMagic, buckets = 0, window = 0, value_size = 0;
  bool operator==(const Meta&) const = default;
};

// Where a key lives: its home bucket and a 16-bit fingerprint that spares most block reads.
struct KeyHash {
  uint64_t home;
  uint64_t fp;
  static KeyHash of(Key k, uint64_t buckets) {
    return {mix64(k ^ 0x6c696e70726f6265ull) % buckets, mix64(k + 0x9e3779b97f4a7c15ull) >> 48};
  }
};

// Slot (8 B, the CAS unit): fp:16 | node:8 | offset/64:40; 0 = empty. Blocks are 64 B aligned
// and never at offset 0 (the region header), so an occupied slot is never 0.
struct Slot {
  static uint64_t make(uint64_t fp, GlobalAddress block) {
    if (block.node() > 0xff || (block.offset() & 63) != 0 || (block.offset() >> 46) != 0)
      throw LimitError("linprobe: block " + block.to_string() + " does not fit a slot word");
    return fp << 48 | uint64_t{block.node()} << 40 | block.offset() >> 6;
  }
  static uint64_t fp(uint64_t w) { return w >> 48; }
  static GlobalAddress block(uint64_t w) {
    return {static_cast<NodeId>(w >> 40 & 0xff), (w & ((uint64_t{1} << 40) - 1)) << 6};
  }
};

// KV block: key:8 | value length:4 | 0:4 | value, zero-padded to 8 | XXH64 of all before it.
// One size per table (room for value_size). Written once before a slot names it and never
// written again while named; the checksum catches a block that a reader reads while its bytes
// are being reused (README "Correctness").
struct Block {
  static constexpr uint32_t kHeader = 16;
  static uint32_t bytes(uint32_t value_size) { return kHeader + ((value_size + 7) & ~7u) + 8; }
  static void encode(Key k, std::string_view v, char* b, uint32_t n) {
    std::memset(b, 0, n);
    const uint32_t len = static_cast<uint32_t>(v.size());
    std::memcpy(b, &k, 8);
    std::memcpy(b + 8, &len, 4);
    if (len) std::memcpy(b + kHeader, v.data(), len);
    const uint64_t sum = xxh64(b, n - 8, kSeed);
    std::memcpy(b + n - 8, &sum, 8);
  }
  // Whole and untorn: a length that fits and a checksum that matches.
  static bool intact(const char* b, uint32_t n) {
    uint32_t len;
    uint64_t sum;
    std::memcpy(&len, b + 8, 4);
    std::memcpy(&sum, b + n - 8, 8);
    return len <= n - kHeader - 8 && sum == xxh64(b, n - 8, kSeed);
  }
  static Key key(const char* b) {
    Key k;
    std::memcpy(&k, b, 8);
    return k;
  }
  static std::string_view value(const char* b) {
    uint32_t len;
    std::memcpy(&len, b + 8, 4);
    return {b + kHeader, len};
  }
  static constexpr uint64_t kSeed = 0x626c6f636bull;
};

}  // namespace dmrt::linprobe
