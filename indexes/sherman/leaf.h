// Sherman leaf: fenced header + sealed entries (node version in every object), local image helpers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "indexes/common/value_slot.h"
#include "runtime/address.h"
#include "runtime/kv.h"
#include "runtime/sealed_object.h"

namespace dmrt::sherman {

using sealed::Meta;

// Remote layout (8-byte words):
//   [0]      lock word (0 free), outside the image
//   [1..4]   header object: meta(nv, flags = valid|hi_inf) lo hi sibling
//   [5 + i*ew ...] entry i: meta(nv, flags = occupied) key value[vw]     (ew = 2 + vw)
// Two-level versions, made sound: a node write (split, sorted insert) rewrites every object
// with nv+1; an entry write rewrites one entry with the current nv. Each object is sealed by a
// checksum, so a read never accepts a half-written object, and a read is accepted only if
// *every* object carries the same nv as the header. Sherman's published bug (a reader sees a
// consistent node version and a consistent entry version from different node images, and
// returns not-found) cannot happen: an entry from the image before a split has nv, the header
// after it nv+1, and the read is retried.
class LeafGeometry {
 public:
  static constexpr uint8_t kValid = 1, kHiInf = 2, kOccupied = 1;
  LeafGeometry(uint32_t span, uint32_t value_size)
      : span_(span), value_size_(value_size), vw_(btree::value_words(value_size)) {}

  uint32_t span() const { return span_; }
  uint32_t vw() const { return vw_; }
  uint32_t ew() const { return 2 + vw_; }
  uint32_t value_size() const { return value_size_; }
  size_t image_words() const { return 4 + size_t{span_} * ew(); }
  uint32_t image_bytes() const { return static_cast<uint32_t>(image_words() * 8); }
  uint64_t remote_bytes() const { return 8 + image_bytes(); }
  size_t entry_word(uint32_t i) const { return 4 + size_t{i} * ew(); }       // index into image
  uint64_t entry_offset(uint32_t i) const { return 8 + 8 * entry_word(i); }  // from node start

 private:
  uint32_t span_, value_size_, vw_;
};

// A leaf image in local memory (words 1.. of the node).
struct LeafImage {
  const LeafGeometry* g = nullptr;
  std::vector<uint64_t> w;

  explicit LeafImage(const LeafGeometry& geo) : g(&geo), w(geo.image_words(), 0) {}

  uint8_t nv() const { return sealed::meta_of(&w[0]).nv; }
  bool hi_inf() const { return sealed::meta_of(&w[0]).flags & LeafGeometry::kHiInf; }
  Key lo() const { return w[1]; }
  Key hi() const { return w[2]; }
  GlobalAddress sibling() const { return GlobalAddress::from_raw(w[3]); }
  bool covers(Key k) const { return k >= lo() && (hi_inf() || k < hi()); }

  uint64_t* entry(uint32_t i) { return &w[g->entry_word(i)]; }
  const uint64_t* entry(uint32_t i) const { return &w[g->entry_word(i)]; }
  bool occupied(uint32_t i) const {
    return sealed::meta_of(entry(i)).flags & LeafGeometry::kOccupied;
  }
  Key key(uint32_t i) const { return entry(i)[1]; }
  const uint64_t* value(uint32_t i) const { return entry(i) + 2; }

  // Every object sealed and carrying the header's nv.
  bool consistent() const {
    if (!sealed::verify(&w[0], 3)) return false;
    uint8_t v = nv();
    for (uint32_t i = 0; i < g->span(); ++i) {
      if (!sealed::verify(entry(i), 1 + g->vw())) return false;
      if (sealed::meta_of(entry(i)).nv != v) return false;
    }
    return true;
  }
  int find(Key k) const {
    for (uint32_t i = 0; i < g->span(); ++i)
      if (occupied(i) && key(i) == k) return static_cast<int>(i);
    return -1;
  }
  int free_slot() const {
    for (uint32_t i = 0; i < g->span(); ++i)
      if (!occupied(i)) return static_cast<int>(i);
    return -1;
  }

  void set_header(uint8_t nv, Key lo, Key hi, bool hi_inf, GlobalAddress sib) {
    w[1] = lo;
    w[2] = hi;
    w[3] = sib.raw();
    sealed::seal(
        &w[0], 3,
        Meta{nv, static_cast<uint8_t>(LeafGeometry::kValid | (hi_inf ? LeafGeometry::kHiInf : 0)),
             0});
  }
  void set_entry(uint32_t i, uint8_t nv, bool occ, Key k, const uint64_t* val) {
    uint64_t* e = entry(i);
    e[1] = occ ? k : 0;
    for (uint32_t j = 0; j < g->vw(); ++j) e[2 + j] = occ ? val[j] : 0;
    sealed::seal(e, 1 + g->vw(),
                 Meta{nv, static_cast<uint8_t>(occ ? LeafGeometry::kOccupied : 0), 0});
  }
  // Re-seal every object with a new node version (a node write).
  void reseal_all(uint8_t nv) {
    set_header(nv, lo(), hi(), hi_inf(), sibling());
    for (uint32_t i = 0; i < g->span(); ++i) {
      bool occ = occupied(i);
      set_entry(i, nv, occ, key(i), value(i));
    }
  }
};

}  // namespace dmrt::sherman
