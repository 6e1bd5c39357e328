// B+-tree internal node: decoded form, remote layout (lock word + sealed image), child choice.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "dmrt/indexes/common/btree_keys.h"
#include "dmrt/runtime/address.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/sealed_object.h"

namespace dmrt::btree {

// Remote layout (8-byte words), with integer keys (IntKeys, one word per key):
//   [0] lock word (0 = free), never part of the image
//   [1] meta (checksum over words 1..; nv, flags = valid|hi_inf|tagged, extra = level)
//   [2] count  [3] lo  [4] hi  [5] sibling  [6] leftmost  [7] sibling_leftmost
//   [8 + 2i] key i, [9 + 2i] child i, i < fanout
// A key policy with kw words per key slot (btree_keys.h; ByteKeys) widens lo, hi and each key to
// kw words in place: [3] lo, [3 + kw] hi, [3 + 2kw] sibling, ...; entry i is kw + 1 words.
// A tagged node (DMTree's bottom level, §3.2.2) also carries one tag word per child:
//   [8] leftmost's tag, then [9 + 3i] key i, [10 + 3i] child i, [11 + 3i] child i's tag
// A tag is the index's word about its child; its low 24 bits are a wrapping version (DMTree: the
// leaf's version ID under its fingerprint table's id), so a tag is only replaced by a newer one.
// Internal nodes are only ever written whole, under the lock, so one checksum over the used
// part of the image validates a lock-free read. Keys are [lo, hi); lo = K's minimum (0, or the
// empty byte string) is -inf.
template <class K>
struct BasicInternalNode {
  using KeyT = typename K::Key;
  using View = typename K::View;
  static constexpr uint8_t kValid = 1, kHiInf = 2, kTagged = 4;
  static constexpr uint64_t kHeaderWords = 7;  // words 1..7 (8 with the leftmost tag), kw = 1

  GlobalAddress addr;
  uint8_t nv = 0;
  uint8_t level = 1;
  bool hi_inf = true;
  KeyT lo{}, hi{};
  GlobalAddress sibling, leftmost;
  // Leftmost child of the right sibling: the "next child" of our last child, which CHIME's
  // sibling-based validation compares a leaf's sibling pointer against.
  GlobalAddress sibling_leftmost;
  std::vector<KeyT> keys;  // sorted pivots
  std::vector<GlobalAddress> children;
  bool tagged = false;         // carries a tag per child (layout above)
  uint64_t leftmost_tag = 0;   // tagged only
  std::vector<uint64_t> tags;  // tagged only: tags[i] belongs to children[i]

  // kw: words per key slot (K::words()).
  static uint64_t header_words(bool tagged, uint64_t kw = 1) {
    return kHeaderWords + 2 * (kw - 1) + (tagged ? 1 : 0);
  }
  static uint64_t entry_words(bool tagged, uint64_t kw = 1) { return kw + (tagged ? 2 : 1); }
  static uint64_t remote_bytes(uint32_t fanout, bool tagged = false, uint64_t kw = 1) {
    return 8 * (1 + header_words(tagged, kw) + entry_words(tagged, kw) * fanout);
  }
  static uint64_t image_bytes(uint32_t fanout, bool tagged = false, uint64_t kw = 1) {
    return remote_bytes(fanout, tagged, kw) - 8;
  }
  // Whether tag a is newer than b (same child): their 24-bit versions, wrapping.
  static bool tag_newer(uint64_t a, uint64_t b) {
    uint32_t d = static_cast<uint32_t>(a - b) & 0xffffff;
    return (a >> 24) != (b >> 24) || (d != 0 && d < (1u << 23));
  }

  size_t count() const { return keys.size(); }
  bool covers(View k) const { return k >= K::view(lo) && (hi_inf || k < K::view(hi)); }
  // Position p: 0 = leftmost (keys < keys[0]), p >= 1 = children[p-1].
  size_t child_pos(View k) const {
    return static_cast<size_t>(
        std::upper_bound(keys.begin(), keys.end(), k,
                         [](View a, const KeyT& b) { return a < K::view(b); }) -
        keys.begin());
  }
  GlobalAddress child_at(size_t p) const { return p == 0 ? leftmost : children[p - 1]; }
  GlobalAddress next_of(size_t p) const { return p < count() ? children[p] : sibling_leftmost; }
  uint64_t child_tag(size_t p) const { return p == 0 ? leftmost_tag : tags[p - 1]; }
  void set_child_tag(size_t p, uint64_t t) { (p == 0 ? leftmost_tag : tags[p - 1]) = t; }
  // Position of `child`, or count() + 1 when the node does not point to it.
  size_t position_of(GlobalAddress child) const {
    for (size_t p = 0; p <= count(); ++p)
      if (child_at(p) == child) return p;
    return count() + 1;
  }
  // Adds (key, child, tag) as keys[i] / children[i]; removes keys[i] and children[i].
  void insert_entry(size_t i, View k, GlobalAddress child, uint64_t tag) {
    keys.insert(keys.begin() + i, KeyT(k));
    children.insert(children.begin() + i, child);
    if (tagged) tags.insert(tags.begin() + i, tag);
  }
  void erase_entry(size_t i) {
    keys.erase(keys.begin() + i);
    children.erase(children.begin() + i);
    if (tagged) tags.erase(tags.begin() + i);
  }
  // Bytes this node costs in a compute-side cache (image plus bookkeeping).
  uint64_t cache_cost(uint64_t kw = 1) const {
    return 8 * (header_words(tagged, kw) + entry_words(tagged, kw) * count()) + 96;
  }

  // Image words (without the lock word), ready to WRITE at addr + 8.
  std::vector<uint64_t> encode(uint32_t fanout, const K& kp = K{}) const {
    const uint64_t kw = kp.words();
    const uint64_t hw = header_words(tagged, kw), ew = entry_words(tagged, kw);
    std::vector<uint64_t> w(hw + ew * fanout, 0);
    w[1] = count();
    kp.put(&w[2], K::view(lo));
    kp.put(&w[2 + kw], K::view(hi));
    const uint64_t p = 2 + 2 * kw;  // sibling, leftmost, sibling_leftmost, leftmost tag
    w[p] = sibling.raw();
    w[p + 1] = leftmost.raw();
    w[p + 2] = sibling_leftmost.raw();
    if (tagged) w[p + 3] = leftmost_tag;
    for (size_t i = 0; i < count(); ++i) {
      kp.put(&w[hw + ew * i], K::view(keys[i]));
      w[hw + ew * i + kw] = children[i].raw();
      if (tagged) w[hw + ew * i + kw + 1] = tags[i];
    }
    sealed::Meta m{
        nv, static_cast<uint8_t>(kValid | (hi_inf ? kHiInf : 0) | (tagged ? kTagged : 0)), level};
    sealed::seal(w.data(), hw - 1 + ew * count(), m);
    return w;
  }
  // Null when the image is torn (checksum) or malformed. `words`: how many were read (0: an
  // untagged image, image_bytes(fanout) / 8; a tagged node needs image_bytes(fanout, true) / 8).
  static std::optional<BasicInternalNode> decode(GlobalAddress addr, const uint64_t* w,
                                                 uint32_t fanout, uint64_t words = 0,
                                                 const K& kp = K{}) {
    const uint64_t kw = kp.words();
    if (words == 0) words = image_bytes(fanout, false, kw) / 8;
    uint64_t n = w[1];
    if (n > fanout) return std::nullopt;
    const bool tg = sealed::meta_of(w).flags & kTagged;
    const uint64_t hw = header_words(tg, kw), ew = entry_words(tg, kw);
    if (hw + ew * n > words) return std::nullopt;
    if (!sealed::verify(w, hw - 1 + ew * n)) return std::nullopt;
    sealed::Meta m = sealed::meta_of(w);
    if (!(m.flags & kValid) || m.extra == 0) return std::nullopt;
    BasicInternalNode node;
    node.addr = addr;
    node.nv = m.nv;
    node.level = static_cast<uint8_t>(m.extra);
    node.hi_inf = m.flags & kHiInf;
    node.tagged = tg;
    node.lo = KeyT(kp.get(&w[2]));
    node.hi = KeyT(kp.get(&w[2 + kw]));
    const uint64_t p = 2 + 2 * kw;
    node.sibling = GlobalAddress::from_raw(w[p]);
    node.leftmost = GlobalAddress::from_raw(w[p + 1]);
    node.sibling_leftmost = GlobalAddress::from_raw(w[p + 2]);
    if (tg) node.leftmost_tag = w[p + 3];
    node.keys.resize(n);
    node.children.resize(n);
    if (tg) node.tags.resize(n);
    for (size_t i = 0; i < n; ++i) {
      node.keys[i] = KeyT(kp.get(&w[hw + ew * i]));
      node.children[i] = GlobalAddress::from_raw(w[hw + ew * i + kw]);
      if (tg) node.tags[i] = w[hw + ew * i + kw + 1];
    }
    return node;
  }
};

using InternalNode = BasicInternalNode<IntKeys>;

}  // namespace dmrt::btree
