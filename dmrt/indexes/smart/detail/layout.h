// SMART's remote layout: the 8-byte slot and header words of its homogeneous inner nodes, the
// leaf (key, value, checksum, lock), and the key as big-endian bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::smart {

// Node types (§4.1). Every type has the same slot format and a node is always allocated with
// room for 256 slots, so that a full node grows in place: an insert CASes a slot past its type's
// end ("insert behind") and then raises the type in the header and in the parent's slot.
inline constexpr unsigned kTypes = 4;
inline constexpr unsigned kTypeSlots[kTypes] = {4, 16, 48, 256};
inline constexpr unsigned kMaxSlots = 256;
inline constexpr unsigned kNode256 = 3;
inline constexpr unsigned kPrefixMax = 5;  // prefix bytes a header holds; longer: a chain
inline constexpr uint64_t kNodeBytes = 8 + 8ull * kMaxSlots;

// The smallest type whose slots cover slot index i.
constexpr unsigned type_covering(unsigned i) {
  for (unsigned t = 0; t < kTypes; ++t)
    if (i < kTypeSlots[t]) return t;
  return kNode256;
}

// Slot word: bits 0-7 the partial key byte, bit 8 leaf, bits 9-10 the child's node type, bits
// 16-63 the child's address (node id: 10 bits, offset / 8: 38 bits). 0 is an empty slot. One CAS
// installs a child, switches a leaf for a node, or raises a child's type.
struct Slot {
  uint64_t w = 0;

  static constexpr unsigned kNodeBits = 10, kOffBits = 38;
  static Slot make(uint8_t partial, bool leaf, unsigned type, GlobalAddress a) {
    if (a.node() >= (1u << kNodeBits) || (a.offset() & 7) ||
        (a.offset() >> 3) >= (1ull << kOffBits))
      throw LimitError("smart: address " + a.to_string() + " does not fit a slot word");
    uint64_t packed = uint64_t{a.node()} << kOffBits | a.offset() >> 3;
    return {partial | uint64_t{leaf} << 8 | uint64_t{type & 3} << 9 | packed << 16};
  }
  bool empty() const { return w == 0; }
  uint8_t partial() const { return static_cast<uint8_t>(w); }
  bool leaf() const { return (w >> 8) & 1; }
  unsigned type() const { return (w >> 9) & 3; }
  GlobalAddress addr() const {
    uint64_t p = w >> 16;
    return {static_cast<NodeId>(p >> kOffBits), (p & ((1ull << kOffBits) - 1)) << 3};
  }
  Slot with_type(unsigned t) const { return {(w & ~(uint64_t{3} << 9)) | uint64_t{t & 3} << 9}; }
  Slot with_partial(uint8_t p) const { return {(w & ~uint64_t{0xff}) | p}; }
};

// Header word: bits 0-15 the depth (key byte index of the prefix's first byte), bits 16-17 the
// node type, bits 18-20 the prefix length, bytes 3-7 the prefix. A node's slots branch on key
// byte depth + prefix length: that position never changes (a prefix split moves bytes from the
// prefix into a new parent and raises the depth by as much), which is what keeps cached nodes
// usable without a reverse pointer (README).
struct Header {
  uint64_t w = 0;

  static Header make(unsigned depth, unsigned type, const uint8_t* prefix, unsigned len) {
    uint64_t w = uint64_t{depth & 0xffff} | uint64_t{type & 3} << 16 | uint64_t{len & 7} << 18;
    for (unsigned i = 0; i < len; ++i) w |= uint64_t{prefix[i]} << (24 + 8 * i);
    return {w};
  }
  unsigned depth() const { return w & 0xffff; }
  unsigned type() const { return (w >> 16) & 3; }
  unsigned len() const { return (w >> 18) & 7; }
  uint8_t prefix(unsigned i) const { return static_cast<uint8_t>(w >> (24 + 8 * i)); }
  unsigned pos() const { return depth() + len(); }  // the key byte the slots branch on
  Header with_type(unsigned t) const {
    return {(w & ~(uint64_t{3} << 16)) | uint64_t{t & 3} << 16};
  }
  // The header after a prefix split at absolute key position m (depth() <= m < pos()): the
  // bytes before m+1 moved into the new parent.
  Header cut(unsigned m) const {
    uint8_t rest[kPrefixMax];
    unsigned skip = m + 1 - depth(), n = len() - skip;
    for (unsigned i = 0; i < n; ++i) rest[i] = prefix(skip + i);
    return make(m + 1, type(), rest, n);
  }
};

// The key as the tree branches on it: `n` encoded bytes in which no key is a prefix of another
// and byte order is key order. key_size 8 (integer keys): the 8 bytes themselves. key_size > 8:
// the key zero-padded to key_size, then its length as 2 big-endian bytes. A key and a longer key
// that extends it with zeros pad alike and are told apart by the length (the shorter one, the
// smaller length, sorts first); if the extension has a non-zero byte, the padding's 0 sorts
// first. So every key has a leaf at the same encoded depth, and no leaf ever sits at an inner
// node (README "Long keys").
inline constexpr size_t kMaxEncoded = kMaxKeyBytes + 2;
constexpr uint32_t encoded_bytes(uint32_t key_size) {
  return key_size > kIntegerKeyBytes ? key_size + 2 : key_size;
}

struct KeyBytes {
  uint32_t n = 0;    // encoded bytes
  uint32_t len = 0;  // the key's own bytes (b[0, len))
  uint8_t b[kMaxEncoded];

  // The integer key k: its 8 big-endian bytes, encoded for key_size.
  KeyBytes(Key k, uint32_t key_size) {
    put_key_bytes(k, reinterpret_cast<char*>(b));
    finish(8, key_size);
  }
  // A byte key of 1..key_size bytes (checked by the caller).
  KeyBytes(KeyView k, uint32_t key_size) {
    std::memcpy(b, k.data(), k.size());
    finish(static_cast<uint32_t>(k.size()), key_size);
  }
  // A leaf's key: key_size stored bytes (zero-padded) and its length.
  KeyBytes(const uint8_t* stored, uint32_t l, uint32_t key_size) {
    std::memcpy(b, stored, key_size);
    len = l;
    set_length(key_size);
  }

  uint8_t operator[](unsigned i) const { return b[i]; }
  std::string_view view(unsigned m) const { return {reinterpret_cast<const char*>(b), m}; }
  KeyView raw() const { return view(len); }

 private:
  void finish(uint32_t l, uint32_t key_size) {
    len = l;
    if (l < key_size) std::memset(b + l, 0, key_size - l);
    set_length(key_size);
  }
  void set_length(uint32_t key_size) {
    n = encoded_bytes(key_size);
    if (n > key_size) {
      b[key_size] = static_cast<uint8_t>(len >> 8);
      b[key_size + 1] = static_cast<uint8_t>(len);
    }
  }
};

// Leaf: [status][checksum][key, zero-padded to key_size and to 8][value, padded to 8]. Status
// bit 0 is the leaf's lock (in-place updates and deletes take it, §4.2), bit 1 says the key is
// present (a delete clears it: the leaf stays in its slot, so slots never become empty again),
// bits 16-31 the key's length when key_size > 8 (0 for integer keys: 8-byte leaves are
// unchanged), bits 32-63 the holder of the lock or of the obsolete mark (client id + 1; 0 when
// neither is set), so that a waiter can ask whether the holder's process died (issue 39). The
// checksum covers the present bit, the length, key and value: a read that overlaps a write sees
// it fail and re-reads.
struct LeafGeometry {
  uint32_t key_size, value_size;
  uint32_t key_words() const { return (key_size + 7) / 8; }
  uint32_t encoded() const { return encoded_bytes(key_size); }
  uint32_t value_words() const { return (value_size + 7) / 8; }
  uint32_t words() const { return 2 + key_words() + value_words(); }
  uint32_t bytes() const { return 8 * words(); }
};

inline constexpr uint64_t kLocked = 1, kPresent = 2;
// rcu (options.h): the leaf was (or is being) replaced by a new leaf in its slot; never cleared
// once the replacement is published. Not under the checksum: it is set by a CAS on the status.
inline constexpr uint64_t kObsolete = 4;
inline constexpr unsigned kOwnerShift = 32;
inline constexpr uint64_t kOwnerMask = ~uint64_t{0} << kOwnerShift;
inline constexpr unsigned kLenShift = 16;
inline constexpr uint64_t kLenMask = uint64_t{0xffff} << kLenShift;

// The holder bits a client sets with the lock or obsolete bit, and the client id a status names
// (-1: none). Ids are below 2^32 - 1 (dmrt/runtime/client.h).
inline uint64_t leaf_owner_bits(uint32_t client) {
  return uint64_t{client + 1} << kOwnerShift;
}
inline int64_t leaf_owner(uint64_t status) {
  return static_cast<int64_t>(status >> kOwnerShift) - 1;
}

// The key length a leaf's status word records (key_size > 8), or 8.
inline uint32_t leaf_key_len(uint64_t status, uint32_t key_size) {
  return key_size > kIntegerKeyBytes ? static_cast<uint32_t>((status & kLenMask) >> kLenShift)
                                     : kIntegerKeyBytes;
}
inline uint64_t leaf_len_bits(uint32_t len, uint32_t key_size) {
  return key_size > kIntegerKeyBytes ? uint64_t{len} << kLenShift : 0;
}

inline uint64_t leaf_checksum(const uint64_t* w, uint32_t words) {
  uint64_t h = mix64(0x5a17ull ^ (w[0] & (kPresent | kLenMask)));
  for (uint32_t i = 2; i < words; ++i) h = mix64(h ^ w[i]) + 0x9e3779b97f4a7c15ull;
  return h | 1;  // never 0: a zeroed leaf is never consistent
}

}  // namespace dmrt::smart
