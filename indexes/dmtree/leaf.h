// DMTree leaf (memory node) and fingerprint-table payload (compute nodes): layouts and helpers.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "indexes/common/value_slot.h"
#include "runtime/address.h"
#include "runtime/collab/service.h"
#include "runtime/kv.h"
#include "runtime/sealed_object.h"

namespace dmrt::dmtree {

// One-byte fingerprint; 0 marks an empty slot.
inline uint8_t fingerprint(Key k) {
  uint8_t f = static_cast<uint8_t>(mix64(k ^ 0x2545f4914f6cdd1dull) >> 56);
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
// the ring) and the leaf's version ID. indexes/common/internal_node.h keeps it per child and
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
// leaf's lock is the tail word of its fingerprint table.
//   [0..3]  header: meta(version, valid|hi_inf) lo hi sibling(id+1, 0 = none); no valid = merged
//           away (dead)
//   [4 + i*ew] entry i: meta(version, occupied) key value[vw]       (ew = 2 + vw)
// Every object is sealed (checksum): the transports promise 8-byte atomicity only, so even an
// entry inside one cache line can be read torn; the paper's "CRC on units that span cache lines"
// is therefore applied to every unit. Every entry carries the leaf's version ID.
class Geometry {
 public:
  static constexpr uint8_t kValid = 1, kHiInf = 2, kOccupied = 1;
  Geometry(uint32_t span, uint32_t value_size)
      : span_(span), value_size_(value_size), vw_(btree::value_words(value_size)) {}
  uint32_t span() const { return span_; }
  uint32_t vw() const { return vw_; }
  uint32_t ew() const { return 2 + vw_; }
  uint32_t value_size() const { return value_size_; }
  uint32_t leaf_words() const { return 4 + span_ * ew(); }
  uint32_t leaf_bytes() const { return (leaf_words() * 8 + 63) & ~63u; }
  uint64_t entry_offset(uint32_t i) const { return 8ull * (4 + i * ew()); }
  // Fingerprint table payload: lo hi sibling fps[span] (bytes, in words).
  uint32_t fp_words() const { return (span_ + 7) / 8; }
  uint32_t payload_words() const { return 3 + fp_words(); }

 private:
  uint32_t span_, value_size_, vw_;
};

// A table image: [meta][lo][hi][sibling][fps...][lock]  (service-owned meta and lock).
struct Table {
  std::vector<uint64_t> w;
  explicit Table(const Geometry& g) : w(g.payload_words() + 2, 0) {}
  uint64_t* data() { return w.data(); }
  uint64_t* payload() { return w.data() + 1; }
  uint32_t version() const { return collab::table_version(w.data()); }
  uint8_t flags() const { return collab::table_flags(w.data()); }
  bool hi_inf() const { return flags() & collab::kUserFlag0; }
  bool dead() const { return flags() & kDeadFlag; }
  Key lo() const { return w[1]; }
  Key hi() const { return w[2]; }
  uint64_t sibling() const { return w[3]; }  // id + 1; 0 = none
  bool covers_hi(Key k) const { return hi_inf() || k < hi(); }
  uint64_t lock_word() const { return w.back(); }
  uint8_t fp(uint32_t i) const { return reinterpret_cast<const uint8_t*>(&w[4])[i]; }
  void set_fp(uint32_t i, uint8_t f) { reinterpret_cast<uint8_t*>(&w[4])[i] = f; }
  uint8_t user_flags() const { return hi_inf() ? collab::kUserFlag0 : 0; }
  uint32_t used(uint32_t span) const {
    uint32_t n = 0;
    for (uint32_t i = 0; i < span; ++i) n += fp(i) != 0;
    return n;
  }
};

// A leaf image in local memory.
struct LeafImage {
  const Geometry* g;
  std::vector<uint64_t> w;
  explicit LeafImage(const Geometry& geo) : g(&geo), w(geo.leaf_words(), 0) {}

  uint32_t version() const { return version_of(&w[0]); }
  bool hi_inf() const { return sealed::meta_of(&w[0]).flags & Geometry::kHiInf; }
  bool dead() const { return !(sealed::meta_of(&w[0]).flags & Geometry::kValid); }
  Key lo() const { return w[1]; }
  Key hi() const { return w[2]; }
  uint64_t sibling() const { return w[3]; }
  uint64_t* entry(uint32_t i) { return &w[4 + i * g->ew()]; }
  const uint64_t* entry(uint32_t i) const { return &w[4 + i * g->ew()]; }

  void set_header(uint32_t version, Key lo, Key hi, bool hi_inf, uint64_t sibling,
                  bool dead = false) {
    w[1] = lo;
    w[2] = hi;
    w[3] = sibling;
    sealed::seal(&w[0], 3,
                 meta_for(version, static_cast<uint8_t>((dead ? 0 : Geometry::kValid) |
                                                        (hi_inf ? Geometry::kHiInf : 0))));
  }
  bool consistent() const {
    if (!sealed::verify(&w[0], 3)) return false;
    for (uint32_t i = 0; i < g->span(); ++i)
      if (!sealed::verify(entry(i), 1 + g->vw()) || version_of(entry(i)) != version()) return false;
    return true;
  }
};

// Entry helpers on a raw entry buffer of ew words.
inline void make_entry(uint64_t* e, const Geometry& g, uint32_t version, bool occupied, Key k,
                       const uint64_t* val) {
  e[1] = occupied ? k : 0;
  for (uint32_t j = 0; j < g.vw(); ++j) e[2 + j] = occupied && val ? val[j] : 0;
  sealed::seal(e, 1 + g.vw(), meta_for(version, occupied ? Geometry::kOccupied : 0));
}
inline bool entry_sealed(const uint64_t* e, const Geometry& g) {
  return sealed::verify(e, 1 + g.vw());
}
inline bool entry_occupied(const uint64_t* e) {
  return sealed::meta_of(e).flags & Geometry::kOccupied;
}

}  // namespace dmrt::dmtree
