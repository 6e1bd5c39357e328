// B+-tree internal node: decoded form, remote layout (lock word + sealed image), child choice.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/address.h"
#include "runtime/kv.h"
#include "runtime/sealed_object.h"

namespace dmrt::btree {

// Remote layout (8-byte words):
//   [0] lock word (0 = free), never part of the image
//   [1] meta (checksum over words 1..; nv, flags = valid|hi_inf, extra = level)
//   [2] count  [3] lo  [4] hi  [5] sibling  [6] leftmost  [7] sibling_leftmost
//   [8 + 2i] key i, [9 + 2i] child i, i < fanout
// Internal nodes are only ever written whole, under the lock, so one checksum over the used
// part of the image validates a lock-free read. Keys are [lo, hi); lo = 0 is -inf.
struct InternalNode {
  static constexpr uint8_t kValid = 1, kHiInf = 2;
  static constexpr uint64_t kHeaderWords = 7;  // words 1..7

  GlobalAddress addr;
  uint8_t nv = 0;
  uint8_t level = 1;
  bool hi_inf = true;
  Key lo = 0, hi = 0;
  GlobalAddress sibling, leftmost;
  // Leftmost child of the right sibling: the "next child" of our last child, which CHIME's
  // sibling-based validation compares a leaf's sibling pointer against.
  GlobalAddress sibling_leftmost;
  std::vector<Key> keys;  // sorted pivots
  std::vector<GlobalAddress> children;

  static uint64_t remote_bytes(uint32_t fanout) { return 8 * (1 + kHeaderWords + 2ull * fanout); }
  static uint64_t image_bytes(uint32_t fanout) { return remote_bytes(fanout) - 8; }

  size_t count() const { return keys.size(); }
  bool covers(Key k) const { return k >= lo && (hi_inf || k < hi); }
  // Position p: 0 = leftmost (keys < keys[0]), p >= 1 = children[p-1].
  size_t child_pos(Key k) const {
    return static_cast<size_t>(std::upper_bound(keys.begin(), keys.end(), k) - keys.begin());
  }
  GlobalAddress child_at(size_t p) const { return p == 0 ? leftmost : children[p - 1]; }
  GlobalAddress next_of(size_t p) const { return p < count() ? children[p] : sibling_leftmost; }
  // Bytes this node costs in a compute-side cache (image plus bookkeeping).
  uint64_t cache_cost() const { return 8 * (kHeaderWords + 2 * count()) + 96; }

  // Image words (without the lock word), ready to WRITE at addr + 8.
  std::vector<uint64_t> encode(uint32_t fanout) const {
    std::vector<uint64_t> w(kHeaderWords + 2ull * fanout, 0);
    w[1] = count();
    w[2] = lo;
    w[3] = hi;
    w[4] = sibling.raw();
    w[5] = leftmost.raw();
    w[6] = sibling_leftmost.raw();
    for (size_t i = 0; i < count(); ++i) {
      w[kHeaderWords + 2 * i] = keys[i];
      w[kHeaderWords + 2 * i + 1] = children[i].raw();
    }
    sealed::Meta m{nv, static_cast<uint8_t>(kValid | (hi_inf ? kHiInf : 0)), level};
    sealed::seal(w.data(), kHeaderWords - 1 + 2 * count(), m);
    return w;
  }
  // Null when the image is torn (checksum) or malformed.
  static std::optional<InternalNode> decode(GlobalAddress addr, const uint64_t* w,
                                            uint32_t fanout) {
    uint64_t n = w[1];
    if (n > fanout) return std::nullopt;
    if (!sealed::verify(w, kHeaderWords - 1 + 2 * n)) return std::nullopt;
    sealed::Meta m = sealed::meta_of(w);
    if (!(m.flags & kValid) || m.extra == 0) return std::nullopt;
    InternalNode node;
    node.addr = addr;
    node.nv = m.nv;
    node.level = static_cast<uint8_t>(m.extra);
    node.hi_inf = m.flags & kHiInf;
    node.lo = w[2];
    node.hi = w[3];
    node.sibling = GlobalAddress::from_raw(w[4]);
    node.leftmost = GlobalAddress::from_raw(w[5]);
    node.sibling_leftmost = GlobalAddress::from_raw(w[6]);
    node.keys.resize(n);
    node.children.resize(n);
    for (size_t i = 0; i < n; ++i) {
      node.keys[i] = w[kHeaderWords + 2 * i];
      node.children[i] = GlobalAddress::from_raw(w[kHeaderWords + 2 * i + 1]);
    }
    return node;
  }
};

}  // namespace dmrt::btree
