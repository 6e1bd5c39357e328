// Out-of-leaf KV blocks of indirect items (CHIME §4.5, its CHIME-Indirect and ROLEX-Indirect of
// Fig. 13): a leaf entry holds one pointer word instead of the value.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/verbs.h"

namespace dmrt::kvblock {

// The pointer word a leaf entry holds, as the CHIME authors' DataPointer: the block's length in
// bytes (16 bits) and its address packed in 48 (node: 8 bits, offset: 40 bits), so that a reader
// READs exactly the block in the round trip after the leaf's. 0 = no block.
inline constexpr unsigned kLenShift = 48, kNodeShift = 40;
inline constexpr uint64_t kOffsetMask = (uint64_t{1} << kNodeShift) - 1;

// A block: an 8-byte header (the value's length, 4 bytes; the key bytes the block carries, 2
// bytes: 0 here, the key stays in the leaf; 2 bytes reserved), then the value's bytes. Blocks are
// written once, before the pointer to them is published, and never written again: an update
// writes a new block out of place and swings the pointer, so a reader holding a pointer from a
// consistent leaf image reads a complete block without validating it. Old blocks are not
// reclaimed (neither paper reclaims them; a reader may still hold the pointer).
inline constexpr uint32_t kHeaderBytes = 8;

inline uint32_t block_bytes(size_t value_len) {
  return kHeaderBytes + static_cast<uint32_t>(value_len);
}
inline uint64_t pack(GlobalAddress a, uint32_t bytes) {
  if (a.node() > 0xff || a.offset() > kOffsetMask || bytes > 0xffff)
    throw LimitError("kv block at " + a.to_string() + " of " + std::to_string(bytes) +
                     " bytes does not fit a pointer word");
  return uint64_t{bytes} << kLenShift | uint64_t{a.node()} << kNodeShift | a.offset();
}
inline GlobalAddress address(uint64_t p) {
  return {static_cast<NodeId>((p >> kNodeShift) & 0xff), p & kOffsetMask};
}
inline uint32_t length(uint64_t p) {
  return static_cast<uint32_t>(p >> kLenShift);
}

// Fills `buf` with the block of value `v` (buf is the WRITE's source: keep it until the batch
// ran).
inline void encode(std::string_view v, std::vector<uint8_t>& buf) {
  buf.assign(block_bytes(v.size()), 0);
  const uint32_t n = static_cast<uint32_t>(v.size());
  std::memcpy(buf.data(), &n, 4);
  if (n) std::memcpy(buf.data() + kHeaderBytes, v.data(), n);
}

// Allocates the block of `v`, adds its WRITE to `b` and returns the pointer word to publish once
// the batch ran. `b` must target the block's memory node (Batch is per node): the caller passes
// a batch of its own or one to the same node.
template <class C>
uint64_t stage(C& c, Batch& b, std::string_view v, std::vector<uint8_t>& buf) {
  encode(v, buf);
  const uint32_t n = static_cast<uint32_t>(buf.size());
  GlobalAddress a = c.alloc(n, 8);
  b.write(a, buf.data(), n);
  return pack(a, n);
}

// Adds the READ of the block `p` names to `b`, into `buf`.
inline void read_into(Batch& b, uint64_t p, std::vector<uint8_t>& buf) {
  buf.resize(length(p));
  b.read(address(p), buf.data(), length(p));
}

// The value a block read by read_into() holds, zero-padded to `value_size` as inline values are
// (dmrt/indexes/common/value_slot.h), so that a search returns the same bytes either way.
inline void decode(const std::vector<uint8_t>& buf, uint32_t value_size, std::string& out) {
  uint32_t n = 0;
  if (buf.size() >= kHeaderBytes) std::memcpy(&n, buf.data(), 4);
  if (n > buf.size() - kHeaderBytes) throw Error("kv block: length beyond the block");
  out.assign(value_size > n ? value_size : n, '\0');
  std::memcpy(out.data(), buf.data() + kHeaderBytes, n);
}

}  // namespace dmrt::kvblock
