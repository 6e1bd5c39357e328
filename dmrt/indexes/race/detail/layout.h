// RACE hashing formats: slots, bucket headers, bucket groups, KV blocks, and the key hashes.
#pragma once

#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string>
#include <string_view>

#include "dmrt/indexes/common/xxh64.h"
#include "dmrt/runtime/address.h"
#include "dmrt/runtime/error.h"

namespace dmrt::race {

inline constexpr uint32_t kSlotsPerBucket = 7;  // 7-way: header + 7 slots = one 64 B line
inline constexpr uint32_t kBucketBytes = 64;
inline constexpr uint32_t kGroupBuckets = 3;  // main | overflow | main
inline constexpr uint32_t kGroupBytes = kGroupBuckets * kBucketBytes;
inline constexpr uint32_t kCombinedBytes = 2 * kBucketBytes;  // main + its overflow: one READ
inline constexpr uint32_t kBlockUnit = 64;                    // KV block length unit (paper: 64 B)
inline constexpr uint32_t kMaxBlockUnits = 256;               // Len:8 holds units-1, so 16 KiB
// Subtable memory: a 64 B meta line, then the groups. Meta word 0 holds the subtable it was split
// from while it is being filled, so a reader that meets a pending bucket can look there too.
inline constexpr uint32_t kSubtableMetaBytes = 64;

// --- 47-bit pointers
// ------------------------------------------------------------------------------ A slot has 48 bits
// for the pointer (paper §3.3); dmrt keeps the top one for the tentative flag below. [C] node:8 |
// offset/64:39: every block and subtable is 64 B aligned, so 39 bits address 32 TiB per node; 256
// nodes.
inline uint64_t pack_ptr48(GlobalAddress a) {
  if (a.node() > 0xff || (a.offset() & 63) != 0 || (a.offset() >> 45) != 0)
    throw AddressError("RACE cannot encode " + a.to_string() +
                       " in 47 bits (needs node < 256 and a 64 B aligned offset < 32 TiB)");
  return (uint64_t{a.node()} << 39) | (a.offset() >> 6);
}
inline GlobalAddress unpack_ptr48(uint64_t p) {
  p &= (uint64_t{1} << 47) - 1;
  if (p == 0) return GlobalAddress::null();
  return {static_cast<NodeId>(p >> 39), (p & ((uint64_t{1} << 39) - 1)) << 6};
}

// --- slot: Fp[63:56] | Len[55:48] | Tentative[47] | Ptr[46:0]; all zeros = empty ----------------
// Tentative [C]: an insert claims its slot with the flag set and clears it only after its re-read
// shows no other copy of the key (see RaceIndex::Handle::settle_insert). Readers skip tentative
// slots, so a key is visible in at most one slot and an insert takes effect when it is finalized.
// The paper's position agreement alone cannot give insert-if-absent linearizability: a late
// duplicate in a lower slot would win over a copy whose insert has already returned.
struct Slot {
  static constexpr uint64_t kTentative = uint64_t{1} << 47;
  static uint64_t make(uint8_t fp, uint32_t units, GlobalAddress block) {
    return (uint64_t{fp} << 56) | (uint64_t{units - 1} << 48) | pack_ptr48(block);
  }
  static bool empty(uint64_t w) { return (w & ((uint64_t{1} << 48) - 1)) == 0; }
  static bool tentative(uint64_t w) { return (w & kTentative) != 0; }
  static uint8_t fp(uint64_t w) { return static_cast<uint8_t>(w >> 56); }
  static uint32_t units(uint64_t w) { return static_cast<uint32_t>((w >> 48) & 0xff) + 1; }
  static uint32_t bytes(uint64_t w) { return units(w) * kBlockUnit; }
  static GlobalAddress block(uint64_t w) { return unpack_ptr48(w); }
};

// Bit k set: slot k of the 64 B bucket at `bucket` (8 words, the header first) has fingerprint
// `fp`, whatever the rest of the slot. The usual search tests 28 slots and finds one: byte
// compares over the line instead of a test and a branch per slot (about 240 instructions a
// search, callgrind). The caller checks the bits it gets (empty, tentative).
inline uint32_t fp_matches(const uint64_t* bucket, uint8_t fp) {
#if defined(__SSE2__)
  // Per 16 B: compare the bytes, then movmskpd takes the top bit of each 8-byte word, which is
  // the compare of its top byte, the fingerprint. Word w -> bit w; word 0 is the header.
  const __m128i f = _mm_set1_epi8(static_cast<char>(fp));
  const auto* p = reinterpret_cast<const __m128i*>(bucket);
  auto words = [&](unsigned i) {
    return static_cast<uint32_t>(
        _mm_movemask_pd(_mm_castsi128_pd(_mm_cmpeq_epi8(_mm_loadu_si128(p + i), f))));
  };
  const uint32_t m = words(0) | words(1) << 2 | words(2) << 4 | words(3) << 6;
  return m >> 1;
#else
  uint32_t m = 0;
  for (unsigned k = 0; k < kSlotsPerBucket; ++k) m |= uint32_t{Slot::fp(bucket[1 + k]) == fp} << k;
  return m;
#endif
}

// --- bucket header: pending:1 | LD:8 @32 | suffix:32
// ---------------------------------------------- Written when a subtable is created and changed
// only by a split (paper §3.4.1). `pending` marks a bucket of a subtable being filled by a split
// whose source bucket is not finished yet. [C]
struct Header {
  static constexpr uint64_t kPending = uint64_t{1} << 63;
  static uint64_t make(uint32_t ld, uint32_t suffix, bool pending = false) {
    return (pending ? kPending : 0) | (uint64_t{ld & 0xff} << 32) | suffix;
  }
  static uint32_t ld(uint64_t h) { return static_cast<uint32_t>((h >> 32) & 0xff); }
  static uint32_t suffix(uint64_t h) { return static_cast<uint32_t>(h); }
  static bool pending(uint64_t h) { return (h & kPending) != 0; }
  // SRCD predicate (notes §5.2): the bucket belongs to the key's subtable iff the header suffix is
  // the key's hash suffix at the header's local depth. Covers the paper's cases 1-3 in one test.
  static bool valid_for(uint64_t h, uint64_t key_hash) {
    uint32_t d = ld(h);
    uint64_t mask = d >= 32 ? ~uint64_t{0} : (uint64_t{1} << d) - 1;
    return (key_hash & mask) == suffix(h);
  }
};

// --- geometry ----------------------------------------------------------------------------------
// Main buckets are numbered i in [0, 2G); main i lives in group i/2, first or last bucket.
// Its combined bucket is 128 B starting at bucket 3*(i/2) + (i&1) (notes §2.3).
struct Geometry {
  uint32_t groups = 0;
  uint32_t main_buckets() const { return 2 * groups; }
  uint32_t buckets() const { return kGroupBuckets * groups; }
  uint64_t bytes() const { return kSubtableMetaBytes + uint64_t{kGroupBytes} * groups; }
  static uint32_t first_bucket_of(uint32_t main) { return 3 * (main / 2) + (main & 1); }
  static GlobalAddress bucket_addr(GlobalAddress table, uint32_t bucket) {
    return table + kSubtableMetaBytes + uint64_t{bucket} * kBucketBytes;
  }
  static GlobalAddress combined_addr(GlobalAddress table, uint32_t main) {
    return bucket_addr(table, first_bucket_of(main));
  }
  // Is bucket j (0/1) of main i's combined bucket the main bucket (the other is the overflow)?
  static bool is_main(uint32_t main, unsigned j) { return (main & 1) == j; }
};

// --- hashing -------------------------------------------------------------------------------------
// [C] h1 = XXH64(key bytes, seed A): low bits are the directory suffix, bits above max depth pick
// the first main bucket. h2 (seed B) picks the second, moved to another group if it landed in the
// same one. The fingerprint uses seed C so it is independent of both positions. One path for both
// key modes: an integer key (key_size 8) is hashed as its 8 native bytes, a byte key as its bytes.
struct KeyHash {
  uint64_t h = 0;      // suffix source
  uint32_t main[2]{};  // two main-bucket numbers, in different groups
  uint8_t fp = 0;

  static KeyHash of(std::string_view key, const Geometry& g, uint32_t max_depth) {
    KeyHash k;
    uint64_t h2, f;
    if (key.size() == 8) {
      // Every integer key: the three hashes inlined with the length a constant, so the compiler
      // shares their seed-independent first round (a search hashed one key three times through
      // a call each: 186 instructions, callgrind).
      k.h = xxh64(key.data(), 8, kSuffixSeed);
      h2 = xxh64(key.data(), 8, kSecondSeed);
      f = xxh64(key.data(), 8, kFpSeed);
    } else {
      k.h = xxh64(key.data(), key.size(), kSuffixSeed);
      h2 = xxh64(key.data(), key.size(), kSecondSeed);
      f = xxh64(key.data(), key.size(), kFpSeed);
    }
    k.fp = static_cast<uint8_t>(f);
    const uint64_t n = g.main_buckets();
    // The same numbers as `% n`; a power-of-two n (every default geometry) takes a mask instead
    // of two 64-bit divisions, which sat between the hash and the bucket address it feeds.
    if ((n & (n - 1)) == 0) {
      k.main[0] = static_cast<uint32_t>((k.h >> max_depth) & (n - 1));
      k.main[1] = static_cast<uint32_t>(h2 & (n - 1));
    } else {
      k.main[0] = static_cast<uint32_t>((k.h >> max_depth) % n);
      k.main[1] = static_cast<uint32_t>(h2 % n);
    }
    if (k.main[1] / 2 == k.main[0] / 2)
      k.main[1] = ((k.main[0] / 2 + 1) % g.groups) * 2 + (k.main[1] & 1);
    return k;
  }
  static constexpr uint64_t kSuffixSeed = 0x52414345ull, kSecondSeed = 0x9e3779b97f4a7c15ull,
                            kFpSeed = 0xf00dfeedull;
  static uint64_t suffix_hash(std::string_view key) { return hash(key, kSuffixSeed); }
  // XXH64 of the key's bytes; an 8-byte key (every integer key) with the length a constant, which
  // the inlined hash folds into a handful of instructions.
  static uint64_t hash(std::string_view key, uint64_t seed) {
    if (key.size() == 8) return xxh64(key.data(), 8, seed);
    return xxh64(key.data(), key.size(), seed);
  }
};

// --- KV block: K_len:u32 | V_len:u32 | key[K_len] | value[V_len] | pad | checksum:u64 (last 8 B)
// Sized by the actual key and value, in 64 B units. The key is the one the slot's fingerprint was
// hashed from: 8 native bytes of an integer key (key_size 8), else the key's bytes, 1..key_size.
// The checksum (XXH64 over the lengths, key and value: the bytes a reader uses; the zero padding is
// left out) catches a block read while being re-written after reuse (paper §3.3, as Pilaf). Blocks
// are immutable once a slot points at them.
struct KvBlock {
  static constexpr uint32_t kHeaderBytes = 8;
  static constexpr uint32_t kChecksumBytes = 8;
  // Key plus value bytes a block holds at most.
  static constexpr uint32_t kMaxPayload =
      kMaxBlockUnits * kBlockUnit - kHeaderBytes - kChecksumBytes;

  static uint32_t units_for(size_t key_len, size_t value_len) {
    return static_cast<uint32_t>(
        (kHeaderBytes + key_len + value_len + kChecksumBytes + kBlockUnit - 1) / kBlockUnit);
  }
  // Fills `out` (units_for(key, value) * 64 bytes).
  static void encode(std::string_view key, std::string_view value, std::string& out) {
    uint32_t bytes = units_for(key.size(), value.size()) * kBlockUnit;
    out.assign(bytes, '\0');
    uint32_t klen = static_cast<uint32_t>(key.size()), vlen = static_cast<uint32_t>(value.size());
    std::memcpy(out.data(), &klen, 4);
    std::memcpy(out.data() + 4, &vlen, 4);
    std::memcpy(out.data() + kHeaderBytes, key.data(), klen);
    std::memcpy(out.data() + kHeaderBytes + klen, value.data(), vlen);
    uint64_t sum = checksum(out.data(), klen, vlen);
    std::memcpy(out.data() + bytes - kChecksumBytes, &sum, 8);
  }
  // Whole and consistent: the lengths fit the `bytes` read through the slot and the checksum
  // holds. False for a block re-written under us (the caller retries).
  static bool intact(const char* p, uint32_t bytes) {
    uint32_t klen, vlen;
    std::memcpy(&klen, p, 4);
    std::memcpy(&vlen, p + 4, 4);
    if (klen == 0 || klen > kMaxPayload || vlen > kMaxPayload ||
        uint64_t{units_for(klen, vlen)} * kBlockUnit != bytes)
      return false;
    uint64_t sum;
    std::memcpy(&sum, p + bytes - kChecksumBytes, 8);
    return sum == checksum(p, klen, vlen);
  }
  // XXH64 of the block's lengths, key and value, which `intact` has bounded by the block size. Not
  // the padding: a reader never uses it, and hashing a one-unit block's 56 bytes instead of an
  // integer key's 24 cost a search 142 instructions instead of about 60 (callgrind).
  static uint64_t checksum(const char* p, uint32_t klen, uint32_t vlen) {
    const size_t n = size_t{kHeaderBytes} + klen + vlen;
    if (n == kHeaderBytes + 16) return xxh64(p, kHeaderBytes + 16, 0);  // 8 B key, 8 B value
    return xxh64(p, n, 0);
  }
  enum class Check { kMatch, kOtherKey, kTorn };
  // Classifies a block read through a slot: ours, another key's (fingerprint collision or a reused
  // block), or torn (re-written under us; the caller retries).
  static Check check(const char* p, uint32_t bytes, std::string_view key) {
    if (!intact(p, bytes)) return Check::kTorn;
    return same_key(key_of(p), key) ? Check::kMatch : Check::kOtherKey;
  }
  // An 8-byte key (every integer key) compared as one word, not through a call to memcmp.
  static bool same_key(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    if (a.size() == 8) {
      uint64_t x, y;
      std::memcpy(&x, a.data(), 8);
      std::memcpy(&y, b.data(), 8);
      return x == y;
    }
    return a == b;
  }
  // Of an intact block.
  static std::string_view key_of(const char* p) {
    uint32_t klen;
    std::memcpy(&klen, p, 4);
    return {p + kHeaderBytes, klen};
  }
  static std::string_view value_of(const char* p) {
    uint32_t klen, vlen;
    std::memcpy(&klen, p, 4);
    std::memcpy(&vlen, p + 4, 4);
    return {p + kHeaderBytes + klen, vlen};
  }
};

}  // namespace dmrt::race
