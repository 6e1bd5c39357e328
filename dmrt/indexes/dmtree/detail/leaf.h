// DMTree leaf (memory node) and fingerprint-table payload (compute nodes): layouts and helpers.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "dmrt/indexes/common/btree_keys.h"
#include "dmrt/indexes/common/value_slot.h"
#include "dmrt/runtime/address.h"
#include "dmrt/runtime/collab/service.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/sealed_object.h"

namespace dmrt::dmtree {

// One-byte fingerprint; 0 marks an empty slot.
inline uint8_t fingerprint(Key k) {
  uint8_t f = static_cast<uint8_t>(mix64(k ^ 0x2545f4914f6cdd1dull) >> 56);
  return f ? f : 1;
}
// A byte key's fingerprint comes from all of its bytes (the compute-side tables never see keys).
inline uint8_t fingerprint(std::string_view k) {
  uint8_t f = static_cast<uint8_t>(mix64(hash_bytes(k) ^ 0x2545f4914f6cdd1dull) >> 56);
  return f ? f : 1;
}

// Version IDs are 24 bits here (meta words carry nv:8 + extra:16); they only need to differ
// between consecutive ranges of one leaf.
inline sealed::Meta meta_for(uint32_t version, uint8_t flags) {
  return {static_cast<uint8_t>(version), flags, static_cast<uint16_t>(version >> 8)};
}
inline uint32_t version_of(const uint64_t* obj) {
  sealed::Meta m = sealed::meta_of(obj);
  return (uint32_t{m.nv} | uint32_t{m.extra} << 8) & 0xffffff;
}
inline uint32_t next_version(uint32_t v) {
  return (v + 1) & 0xffffff;
}

// A bottom-level internal entry's tag (§3.2.2, Fig. 8): the pointer to the leaf's fingerprint
// table (its id: the table sits at the same offset on every compute node, the owner comes from
// the ring) and the leaf's version ID. dmrt/indexes/common/internal_node.h keeps it per child and
// replaces it only by a newer version.
inline uint64_t entry_tag(uint64_t table_id, uint32_t version) {
  return table_id << 24 | (version & 0xffffff);
}
inline uint64_t tag_table(uint64_t tag) {
  return tag >> 24;
}
inline uint32_t tag_version(uint64_t tag) {
  return static_cast<uint32_t>(tag & 0xffffff);
}

// Table flag of a leaf merged away (§4.2): final, its id is never reused; whoever reaches it
// traverses again. The leaf itself says so by a header without kValid.
inline constexpr uint8_t kDeadFlag = collab::kUserFlag0 << 1;

// Leaf on the memory node, addressed by its table id: arena + id * leaf_bytes. No lock word: the
// leaf's lock is the tail word of its fingerprint table. A key slot is kw words (the key policy's,
// dmrt/indexes/common/btree_keys.h: 1 for integer keys, the bytes zero-padded + length for byte
// keys).
//   [0..2kw+1]  header: meta(version, valid|hi_inf) lo[kw] hi[kw] sibling(id+1, 0 = none); no
//               valid = merged away (dead)
//   [hw + i*ew] entry i: meta(version, occupied) key[kw] value[vw]    (ew = 1 + kw + vw)
// Every object is sealed (checksum): the transports promise 8-byte atomicity only, so even an
// entry inside one cache line can be read torn; the paper's "CRC on units that span cache lines"
// is therefore applied to every unit. Every entry carries the leaf's version ID.
class Geometry {
 public:
  static constexpr uint8_t kValid = 1, kHiInf = 2, kOccupied = 1;
  Geometry(uint32_t span, uint32_t value_size, uint32_t key_size = 8)
      : span_(span),
        value_size_(value_size),
        key_size_(key_size),
        vw_(btree::value_words(value_size)),
        kw_(key_size == 8 ? 1 : btree::ByteKeys{key_size}.words()) {}
  uint32_t span() const { return span_; }
  uint32_t vw() const { return vw_; }
  uint32_t kw() const { return kw_; }
  uint32_t key_size() const { return key_size_; }
  uint32_t ew() const { return 1 + kw_ + vw_; }
  uint32_t vo() const { return 1 + kw_; }      // an entry's value, in words from its meta
  uint32_t hw() const { return 2 + 2 * kw_; }  // header words
  uint32_t value_size() const { return value_size_; }
  uint32_t leaf_words() const { return hw() + span_ * ew(); }
  uint32_t leaf_bytes() const { return (leaf_words() * 8 + 63) & ~63u; }
  uint64_t entry_offset(uint32_t i) const { return 8ull * (hw() + i * ew()); }
  // Fingerprint table payload: lo[kw] hi[kw] sibling fps[span] (bytes, in words).
  uint32_t fp_words() const { return (span_ + 7) / 8; }
  uint32_t payload_words() const { return 1 + 2 * kw_ + fp_words(); }

 private:
  uint32_t span_, value_size_, key_size_, vw_, kw_;
};

// The key policy of a geometry: IntKeys, or ByteKeys of its key_size.
template <class K>
K keys_of(const Geometry& g) {
  if constexpr (K::kBytes)
    return K{g.key_size()};
  else
    return K{};
}

// A table image: [meta][lo][hi][sibling][fps...][lock]  (service-owned meta and lock).
template <class K = btree::IntKeys>
struct Table {
  using View = typename K::View;
  std::vector<uint64_t> w;
  K keys;
  uint32_t kw;
  explicit Table(const Geometry& g)
      : w(g.payload_words() + 2, 0), keys(keys_of<K>(g)), kw(g.kw()) {}
  uint64_t* data() { return w.data(); }
  uint64_t* payload() { return w.data() + 1; }
  uint32_t version() const { return collab::table_version(w.data()); }
  uint8_t flags() const { return collab::table_flags(w.data()); }
  bool hi_inf() const { return flags() & collab::kUserFlag0; }
  bool dead() const { return flags() & kDeadFlag; }
  View lo() const { return keys.get(&w[1]); }
  View hi() const { return keys.get(&w[1 + kw]); }
  uint64_t sibling() const { return w[1 + 2 * kw]; }  // id + 1; 0 = none
  void set_fences(View lo, View hi, uint64_t sibling) {
    keys.put(&w[1], lo);
    keys.put(&w[1 + kw], hi);
    w[1 + 2 * kw] = sibling;
  }
  bool covers_hi(View k) const { return hi_inf() || k < hi(); }
  uint64_t lock_word() const { return w.back(); }
  uint8_t fp(uint32_t i) const { return reinterpret_cast<const uint8_t*>(&w[2 + 2 * kw])[i]; }
  void set_fp(uint32_t i, uint8_t f) { reinterpret_cast<uint8_t*>(&w[2 + 2 * kw])[i] = f; }
  uint8_t user_flags() const { return hi_inf() ? collab::kUserFlag0 : 0; }
  // The slots i < span whose fingerprint is f, in increasing order, into out; returns how many.
  // Eight fingerprints per word at once: a byte of x = word ^ (f in every byte) is zero exactly
  // where the fingerprint matches, and ((x & 0x7f..) + 0x7f..) | x | 0x7f.. has its top bit
  // clear exactly in those bytes (no carry crosses a byte). A byte-by-byte loop was the largest
  // part of a search's own instructions (shm profile).
  uint32_t slots_with_fp(uint32_t span, uint8_t f, uint32_t* out) const {
    static_assert(std::endian::native == std::endian::little, "fingerprint i = byte i of its word");
    constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7full;
    const uint64_t* fw = &w[2 + 2 * kw];
    const uint64_t fill = uint64_t{f} * 0x0101010101010101ull;
    uint32_t n = 0;
    for (uint32_t base = 0; base < span; base += 8) {
      const uint64_t x = fw[base / 8] ^ fill;
      uint64_t hit = ~(((x & kLow7) + kLow7) | x | kLow7);
      if (span - base < 8) hit &= (uint64_t{1} << (8 * (span - base))) - 1;
      for (; hit; hit &= hit - 1)
        out[n++] = base + static_cast<uint32_t>(std::countr_zero(hit)) / 8;
    }
    return n;
  }
  uint32_t used(uint32_t span) const {
    uint32_t n = 0;
    for (uint32_t i = 0; i < span; ++i) n += fp(i) != 0;
    return n;
  }
};

// A leaf image in local memory.
template <class K = btree::IntKeys>
struct LeafImage {
  using View = typename K::View;
  const Geometry* g;
  std::vector<uint64_t> w;
  K keys;
  explicit LeafImage(const Geometry& geo)
      : g(&geo), w(geo.leaf_words(), 0), keys(keys_of<K>(geo)) {}

  uint32_t version() const { return version_of(&w[0]); }
  bool hi_inf() const { return sealed::meta_of(&w[0]).flags & Geometry::kHiInf; }
  bool dead() const { return !(sealed::meta_of(&w[0]).flags & Geometry::kValid); }
  View lo() const { return keys.get(&w[1]); }
  View hi() const { return keys.get(&w[1 + g->kw()]); }
  uint64_t sibling() const { return w[1 + 2 * g->kw()]; }
  uint64_t* entry(uint32_t i) { return &w[g->hw() + i * g->ew()]; }
  const uint64_t* entry(uint32_t i) const { return &w[g->hw() + i * g->ew()]; }
  View key(const uint64_t* e) const { return keys.get(e + 1); }

  void set_header(uint32_t version, View lo, View hi, bool hi_inf, uint64_t sibling,
                  bool dead = false) {
    keys.put(&w[1], lo);
    keys.put(&w[1 + g->kw()], hi);
    w[1 + 2 * g->kw()] = sibling;
    sealed::seal(&w[0], g->hw() - 1,
                 meta_for(version, static_cast<uint8_t>((dead ? 0 : Geometry::kValid) |
                                                        (hi_inf ? Geometry::kHiInf : 0))));
  }
  bool consistent() const {
    if (!sealed::verify(&w[0], g->hw() - 1)) return false;
    for (uint32_t i = 0; i < g->span(); ++i)
      if (!sealed::verify(entry(i), g->ew() - 1) || version_of(entry(i)) != version()) return false;
    return true;
  }
};

// Entry helpers on a raw entry buffer of ew words; `keys` puts the key in its slot.
template <class K>
void make_entry(uint64_t* e, const Geometry& g, const K& keys, uint32_t version, bool occupied,
                typename K::View k, const uint64_t* val) {
  keys.put(e + 1, occupied ? k : typename K::View{});
  for (uint32_t j = 0; j < g.vw(); ++j) e[g.vo() + j] = occupied && val ? val[j] : 0;
  sealed::seal(e, g.ew() - 1, meta_for(version, occupied ? Geometry::kOccupied : 0));
}
inline bool entry_sealed(const uint64_t* e, const Geometry& g) {
  return sealed::verify(e, g.ew() - 1);
}
inline bool entry_occupied(const uint64_t* e) {
  return sealed::meta_of(e).flags & Geometry::kOccupied;
}

}  // namespace dmrt::dmtree
