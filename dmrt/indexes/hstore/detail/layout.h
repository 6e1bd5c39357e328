// HStore layouts: key hashing, the 8-byte hash slot, key-value records, the meta block and status
// word.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "dmrt/indexes/common/xxh64.h"
#include "dmrt/runtime/address.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::hstore {

// --- hashing (notes A5) ------------------------------------------------------------------------
// One hash picks the head bucket (low bits) and the 1-byte signature (top byte); an independent
// one picks the HTS log and the SLS partition, so that log/partition choice does not correlate
// with bucket position, and every update of a key goes through one log and one partition.
struct KeyHash {
  uint64_t h = 0;
  uint64_t route = 0;
  static KeyHash of(Key k) {
    return {xxh64(&k, sizeof k, 0x4853544f52450001ull), xxh64(&k, sizeof k, 0x4853544f52450002ull)};
  }
  // A key in its byte form: `wide` (key_size > 8) hashes the bytes; otherwise it is the integer
  // key's 8 big-endian bytes, hashed as the integer (the key_size 8 placement is unchanged).
  static KeyHash of(KeyView k, bool wide) {
    if (!wide) return of(key_of_bytes(k));
    return {xxh64(k.data(), k.size(), 0x4853544f52450001ull),
            xxh64(k.data(), k.size(), 0x4853544f52450002ull)};
  }
  uint8_t sig() const { return static_cast<uint8_t>(h >> 56); }
  uint64_t head(uint64_t heads) const { return h & (heads - 1); }
  unsigned log(unsigned n) const { return static_cast<unsigned>(route % n); }
};

// --- hash slot (paper §4.1: signature 1 B, length 1 B, value address 6 B) ------------------------
// bits 63..56 signature | 55..48 record length in 8-byte units | 47..40 node | 39..0 offset / 8.
// 0 = empty. Length 0 with address 1 is a slot the HTS reserved for an insert still being logged
// at the SLS: readers and rebuilds skip it (a live record is at least 2 units long).
namespace slot {
inline constexpr uint64_t kEmpty = 0;
inline constexpr uint64_t kReserved = 1;
inline constexpr uint64_t kMaxOffset = (uint64_t{1} << 43) - 8;

inline uint64_t make(uint8_t sig, uint32_t units, GlobalAddress a) {
  if (a.node() > 255 || a.offset() > kMaxOffset || (a.offset() & 7))
    throw LimitError("hstore: record address " + a.to_string() +
                     " does not fit a 6-byte slot (node < 256, 8-aligned offset < 8 TiB)");
  if (units < 2 || units > 255) throw LimitError("hstore: record length out of range");
  return (uint64_t{sig} << 56) | (uint64_t{units} << 48) | (uint64_t{a.node()} << 40) |
         (a.offset() >> 3);
}
inline uint8_t sig(uint64_t w) {
  return static_cast<uint8_t>(w >> 56);
}
inline uint32_t units(uint64_t w) {
  return static_cast<uint32_t>((w >> 48) & 0xff);
}
inline uint32_t bytes(uint64_t w) {
  return units(w) * 8;
}
inline GlobalAddress addr(uint64_t w) {
  return GlobalAddress(static_cast<NodeId>((w >> 40) & 0xff), (w & ((uint64_t{1} << 40) - 1)) << 3);
}
inline bool live(uint64_t w) {
  return units(w) >= 2;
}
}  // namespace slot

// --- buckets (paper §4.1: 64 B = 7 slots + next)
// ------------------------------------------------------
inline constexpr uint32_t kSlotsPerBucket = 7;
inline constexpr uint32_t kBucketBytes = 64;
inline constexpr uint32_t kNextWord = 7;  // absolute bucket index of the next bucket, 0 = none

// --- key-value record in the pool (notes A2)
// ----------------------------------------------------------- Integer keys (key_size 8):
// word0: magic 0x4853 (16) | value length (16) | check (32) ; word1: key ; value, zero-padded to
// 8. Byte keys (key_size > 8): word0: magic 0x484b (16) | value length (16) | check (32) ; word1:
// key length (16, the rest 0) ; the key's bytes, zero-padded to 8 ; the value, zero-padded to 8.
// Records are written once, before the index points at them, and never modified: the check
// catches a read that raced a re-use (which the grace period is there to prevent).
struct Record {
  static constexpr uint64_t kMagic = 0x4853;
  static constexpr uint64_t kWideMagic = 0x484b;
  static constexpr uint32_t kHeaderBytes = 16;
  static constexpr uint32_t kMaxBytes = 255 * 8;
  static constexpr uint32_t kMaxValue = kMaxBytes - kHeaderBytes;  // 2024 B

  static constexpr uint32_t pad8(size_t n) { return static_cast<uint32_t>((n + 7) & ~size_t{7}); }
  static uint32_t bytes_for(size_t value_len) {
    return static_cast<uint32_t>(kHeaderBytes + ((value_len + 7) & ~size_t{7}));
  }
  static uint32_t bytes_for(size_t key_len, size_t value_len) {
    return kHeaderBytes + pad8(key_len) + pad8(value_len);
  }
  // Allocation size: 64-byte granules, so the allocator's free lists can recycle it.
  static uint32_t alloc_bytes(uint32_t bytes) { return (bytes + 63) & ~uint32_t{63}; }

  static uint32_t check(Key k, std::string_view v) {
    return static_cast<uint32_t>(xxh64(v.data(), v.size(), k ^ 0x5245434f52440001ull));
  }
  static uint32_t check(KeyView k, std::string_view v) {
    uint64_t seed = xxh64(k.data(), k.size(), 0x5245434f52440002ull);
    return static_cast<uint32_t>(xxh64(v.data(), v.size(), seed));
  }
  static void encode(Key k, std::string_view v, std::string& out) {
    if (v.size() > kMaxValue)
      throw LimitError("hstore: value of " + std::to_string(v.size()) + " bytes exceeds the " +
                       std::to_string(kMaxValue) +
                       "-byte limit of a record (1-byte length in 8-byte units)");
    out.assign(bytes_for(v.size()), '\0');
    uint64_t w0 =
        kMagic | (uint64_t{static_cast<uint32_t>(v.size())} << 16) | (uint64_t{check(k, v)} << 32);
    std::memcpy(out.data(), &w0, 8);
    std::memcpy(out.data() + 8, &k, 8);
    if (!v.empty()) std::memcpy(out.data() + 16, v.data(), v.size());
  }
  // Either layout: `wide` says which (the index's key_size > 8).
  static void encode(KeyView k, std::string_view v, bool wide, std::string& out) {
    if (!wide) return encode(key_of_bytes(k), v, out);
    if (bytes_for(k.size(), v.size()) > kMaxBytes)
      throw LimitError("hstore: a key of " + std::to_string(k.size()) + " bytes and a value of " +
                       std::to_string(v.size()) + " bytes exceed the " + std::to_string(kMaxBytes) +
                       "-byte limit of a record (1-byte length in 8-byte units)");
    out.assign(bytes_for(k.size(), v.size()), '\0');
    uint64_t w0 = kWideMagic | (uint64_t{static_cast<uint32_t>(v.size())} << 16) |
                  (uint64_t{check(k, v)} << 32);
    uint64_t w1 = k.size();
    std::memcpy(out.data(), &w0, 8);
    std::memcpy(out.data() + 8, &w1, 8);
    std::memcpy(out.data() + 16, k.data(), k.size());
    if (!v.empty()) std::memcpy(out.data() + 16 + pad8(k.size()), v.data(), v.size());
  }
  enum class Check { kMatch, kOtherKey, kTorn };
  // `p` holds `bytes` bytes read through a slot of that length.
  static Check classify(const char* p, uint32_t bytes, Key k) {
    uint64_t w0, key;
    std::memcpy(&w0, p, 8);
    std::memcpy(&key, p + 8, 8);
    uint32_t vlen = static_cast<uint32_t>((w0 >> 16) & 0xffff);
    if ((w0 & 0xffff) != kMagic || bytes_for(vlen) != bytes) return Check::kTorn;
    if (static_cast<uint32_t>(w0 >> 32) != check(key, {p + 16, vlen})) return Check::kTorn;
    return key == k ? Check::kMatch : Check::kOtherKey;
  }
  static Check classify(const char* p, uint32_t bytes, KeyView k, bool wide) {
    if (!wide) return classify(p, bytes, key_of_bytes(k));
    uint64_t w0, w1;
    std::memcpy(&w0, p, 8);
    std::memcpy(&w1, p + 8, 8);
    uint32_t vlen = static_cast<uint32_t>((w0 >> 16) & 0xffff);
    if ((w0 & 0xffff) != kWideMagic || w1 == 0 || w1 > kMaxKeyBytes || bytes_for(w1, vlen) != bytes)
      return Check::kTorn;
    KeyView rk{p + 16, static_cast<size_t>(w1)};
    if (static_cast<uint32_t>(w0 >> 32) != check(rk, {p + 16 + pad8(w1), vlen}))
      return Check::kTorn;
    return rk == k ? Check::kMatch : Check::kOtherKey;
  }
  // Header-only view (rebuilds read 16 bytes per record): key, if the header is plausible.
  static bool header_key(const char* p, uint32_t bytes, Key& k) {
    uint64_t w0;
    std::memcpy(&w0, p, 8);
    std::memcpy(&k, p + 8, 8);
    uint32_t vlen = static_cast<uint32_t>((w0 >> 16) & 0xffff);
    return (w0 & 0xffff) == kMagic && bytes_for(vlen) == bytes;
  }
  // What a header-and-key read fetches of a record of `bytes` bytes: 16 bytes for an integer key;
  // with byte keys the header and up to `key_len` bytes of key (never more than the record).
  static uint32_t head_bytes(uint32_t bytes, size_t key_len, bool wide) {
    return wide ? std::min<uint32_t>(bytes, kHeaderBytes + pad8(key_len)) : kHeaderBytes;
  }
  // The record's key, from a header-and-key read of `avail` bytes (both layouts; integer keys as
  // their 8 big-endian bytes). False when the header is not plausible or the key is longer than
  // what was read.
  static bool header_key(const char* p, uint32_t bytes, uint32_t avail, bool wide,
                         std::string& out) {
    if (!wide) {
      Key k;
      if (!header_key(p, bytes, k)) return false;
      out.resize(8);
      put_key_bytes(k, out.data());
      return true;
    }
    uint64_t w0, w1;
    std::memcpy(&w0, p, 8);
    std::memcpy(&w1, p + 8, 8);
    uint32_t vlen = static_cast<uint32_t>((w0 >> 16) & 0xffff);
    if ((w0 & 0xffff) != kWideMagic || w1 == 0 || w1 > kMaxKeyBytes ||
        bytes_for(w1, vlen) != bytes || kHeaderBytes + w1 > avail)
      return false;
    out.assign(p + 16, w1);
    return true;
  }
  // True when a header-and-key read shows the record of key `k` (a plausible header; a torn
  // record is caught by the reader that reads it whole).
  static bool header_is(const char* p, uint32_t bytes, uint32_t avail, KeyView k, bool wide) {
    if (!wide) {
      Key rk;
      return header_key(p, bytes, rk) && rk == key_of_bytes(k);
    }
    uint64_t w0, w1;
    std::memcpy(&w0, p, 8);
    std::memcpy(&w1, p + 8, 8);
    uint32_t vlen = static_cast<uint32_t>((w0 >> 16) & 0xffff);
    return (w0 & 0xffff) == kWideMagic && w1 == k.size() && bytes_for(w1, vlen) == bytes &&
           kHeaderBytes + w1 <= avail && KeyView(p + 16, w1) == k;
  }
  static std::string_view value(const char* p) {
    uint64_t w0;
    std::memcpy(&w0, p, 8);
    return {p + 16, static_cast<size_t>((w0 >> 16) & 0xffff)};
  }
  static std::string_view value(const char* p, bool wide) {
    if (!wide) return value(p);
    uint64_t w0, w1;
    std::memcpy(&w0, p, 8);
    std::memcpy(&w1, p + 8, 8);
    return {p + 16 + pad8(w1), static_cast<size_t>((w0 >> 16) & 0xffff)};
  }
};

// A key for messages and errors: the integer for 8-byte keys of an integer index, else hex.
inline std::string key_text(KeyView k, bool wide) {
  if (!wide) return std::to_string(key_of_bytes(k));
  static const char* hex = "0123456789abcdef";
  std::string s = "0x";
  for (unsigned char ch : k.substr(0, 64)) s += hex[ch >> 4], s += hex[ch & 15];
  if (k.size() > 64) s += "...";
  return s;
}

// --- status word: what the manager publishes (notes A22)
// ----------------------------------------------- bit 63 HTS serving its table | bit 62 SLS serving
// | 61..31 HTS epoch | 30..0 SLS epoch. Changed only by CAS verbs (manager and servers); GET reads
// it in the bucket's batch.
namespace status {
inline constexpr uint64_t kHtsUp = uint64_t{1} << 63;
inline constexpr uint64_t kSlsUp = uint64_t{1} << 62;
inline constexpr uint64_t kEpochMask = (uint64_t{1} << 31) - 1;
inline bool hts_up(uint64_t s) {
  return s & kHtsUp;
}
inline bool sls_up(uint64_t s) {
  return s & kSlsUp;
}
inline uint32_t hts_epoch(uint64_t s) {
  return static_cast<uint32_t>((s >> 31) & kEpochMask);
}
inline uint32_t sls_epoch(uint64_t s) {
  return static_cast<uint32_t>(s & kEpochMask);
}
inline uint64_t make(bool hts, bool sls, uint32_t he, uint32_t se) {
  return (hts ? kHtsUp : 0) | (sls ? kSlsUp : 0) | ((uint64_t{he} & kEpochMask) << 31) |
         (se & kEpochMask);
}
}  // namespace status

// --- meta block (on the HTS node; root slot on the first memory node points at it)
// --------------------
inline constexpr uint64_t kMetaMagic = 0x3145524f54534848ull;  // "HHSTORE1"
namespace meta {
inline constexpr uint32_t kMagic = 0, kStatus = 1, kTable = 2, kHeads = 3, kOverflow = 4,
                          kNodes = 5, kBoxes = 6, kGeometry = 7, kFlags = 8, kGrace = 9,
                          kApplyLag = 10, kSlsStats = 11;
// Each server's claim (dmrt/runtime/service_claim.h): its owner token, then its heartbeat, so that
// a second host of a running server is refused and a dead one's replacement takes over.
inline constexpr uint32_t kHtsOwner = 12, kSlsOwner = 14;  // + 1: the heartbeat
inline constexpr uint32_t kHtsStats = 16;                  // 48 counter words follow
inline constexpr uint32_t kWords = 64;
inline constexpr uint32_t kBytes = kWords * 8;
inline constexpr uint64_t kFlagSync = 1;  // 2 and 4 were fault flags: faults are per server
}  // namespace meta

// Counters the servers keep in their own regions (written with local atomics: compute nodes only
// read them). HTS counters live in the meta block, SLS counters in a block on the SLS node.
namespace hts_stat {
enum : uint32_t {
  kRequests,
  kBatches,
  kShipped,
  kApplied,
  kNoops,
  kDedupHits,
  kStale,
  kOverflowUsed,
  kKeys,
  kRebuilds,
  kRebuildNs,
  kRebuildKeys,
  kMalformed,
  kTakeovers,  // claims taken over from a host whose heartbeat had stopped
  kCount
};
}
namespace sls_stat {
enum : uint32_t {
  kLogged,
  kAppliedAsync,
  kAppliedByDrain,
  kScans,
  kDgets,
  kDgetRetries,
  kKeys,
  kRebuilds,
  kRebuildNs,
  kRebuildKeys,
  kDumps,
  kStaleShips,
  kMalformed,
  kTakeovers,
  kCount
};
}
inline constexpr uint32_t kSlsStatsBytes = 64 * 8;

}  // namespace dmrt::hstore
