// Sherman leaf: fenced header and entries, synchronized by the paper's two-level versions or by
// per-object checksums (sync), and the local image helpers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "dmrt/indexes/common/btree_keys.h"
#include "dmrt/indexes/common/value_slot.h"
#include "dmrt/runtime/address.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/sealed_object.h"
#include "dmrt/runtime/verbs.h"

namespace dmrt::sherman {

using sealed::Meta;

// Remote layout (8-byte words):
//   [0]      lock word (0 free), outside the image
//   [1..4]   header object: meta(nv, flags = valid|hi_inf) lo hi sibling
//   [5 + i*ew ...] entry i: meta(nv, flags = occupied) key value[vw]     (ew = 2 + vw)
// That is with integer keys. A key policy with kw words per key slot (ByteKeys,
// dmrt/indexes/common/btree_keys.h) widens lo, hi and each entry's key to kw words in place (header
// 2 + 2kw words, ew = 1 + kw + vw); such a leaf is synchronized by checksums only (below).
// Two-level versions, made sound: a node write (split, sorted insert) rewrites every object
// with nv+1; an entry write rewrites one entry with the current nv. Each object is sealed by a
// checksum, so a read never accepts a half-written object, and a read is accepted only if
// *every* object carries the same nv as the header. Sherman's published bug (a reader sees a
// consistent node version and a consistent entry version from different node images, and
// returns not-found) cannot happen: an entry from the image before a split has nv, the header
// after it nv+1, and the read is retried.
//
// That is the local image, and the remote layout with sync = checksum. With sync = versions the
// remote leaf is the paper's two-level versions (bytes from the node start):
//   [0, 8) lock word; 8: front node version FNV; 9: flags; lo 8, hi 8, sibling 8 (up to 34);
//   entry i at 34 + i*E (E = 10 + value_size): FEV, key 8, value, REV; then the rear node version
//   RNV. FEV = NV:4 | EV:4, REV = occupied:4 | EV:4, FNV = RNV = NV:4 | 0.
// Sherman's entry versions are 4 bits in a byte each; the spare nibble of each FEV carries the
// node version, so every 64-byte line of the leaf holds the node version (entries are at most
// 64 bytes, value_size <= 54) and every entry has a version byte in each line it touches: on a
// line-atomic transport a READ mixing lines of two node images sees two NVs, and a torn entry
// sees FEV.ev != REV.ev. With FNV/RNV alone (Sherman's bookend scheme) a line from the middle of
// a newer image would pass unnoticed: the published bug. Byte keys leave no room for that: the
// fences alone span lines without a version byte, so they take checksums.
class LeafGeometry {
 public:
  static constexpr uint8_t kValid = 1, kHiInf = 2, kOccupied = 1;
  static constexpr uint32_t kMaxVersionsValue = 54;  // entries of at most one cache line
  static constexpr uint32_t kFirstEntry = 34;        // with versions, bytes from the node start
  // kw: words per key slot (the key policy's words()); versions needs kw = 1.
  LeafGeometry(uint32_t span, uint32_t value_size, bool versions = false, uint32_t kw = 1)
      : span_(span),
        value_size_(value_size),
        vw_(btree::value_words(value_size)),
        kw_(kw),
        versions_(versions && kw == 1) {}
  bool versions() const { return versions_; }
  uint32_t entry_bytes() const { return 10 + value_size_; }  // with versions

  uint32_t span() const { return span_; }
  uint32_t vw() const { return vw_; }
  uint32_t kw() const { return kw_; }
  uint32_t ew() const { return 1 + kw_ + vw_; }
  uint32_t value_size() const { return value_size_; }
  uint32_t header_words() const { return 2 + 2 * kw_; }  // meta, lo, hi, sibling
  size_t image_words() const { return header_words() + size_t{span_} * ew(); }
  // Bytes a whole-leaf READ moves (the remote leaf after its lock word).
  uint32_t image_bytes() const {
    return versions_ ? kFirstEntry - 8 + span_ * entry_bytes() + 1
                     : static_cast<uint32_t>(image_words() * 8);
  }
  uint64_t remote_bytes() const { return 8 + image_bytes(); }
  size_t entry_word(uint32_t i) const { return header_words() + size_t{i} * ew(); }  // in image
  // Remote entry i, from the node start, and its size.
  uint64_t entry_offset(uint32_t i) const {
    return versions_ ? kFirstEntry + uint64_t{i} * entry_bytes() : 8 + 8 * entry_word(i);
  }
  uint32_t remote_entry_bytes() const { return versions_ ? entry_bytes() : ew() * 8; }

 private:
  uint32_t span_, value_size_, vw_, kw_;
  bool versions_;
};

// A leaf image in local memory (words 1.. of the node); K: the key policy. Keys are read in place
// (K::get views the image), so an operation builds no key.
template <class K = btree::IntKeys>
struct LeafImage {
  using View = typename K::View;
  const LeafGeometry* g = nullptr;
  K kp;
  std::vector<uint64_t> w;

  // sync = versions only: the remote bytes at their node offsets, each entry's entry-level
  // version, and whether the last decoded READ was torn.
  std::vector<uint8_t> enc;
  std::vector<uint8_t> ev;
  bool torn = false;
  // Where a port to non-coherent memory flushes (FlushPoint): the READs' and the WRITEs' hints.
  FlushHint read_hint = FlushHint::kNone, write_hint = FlushHint::kNone;

  explicit LeafImage(const LeafGeometry& geo, const K& keys = K{})
      : g(&geo),
        kp(keys),
        w(geo.image_words(), 0),
        enc(geo.versions() ? geo.remote_bytes() : 0, 0),
        ev(geo.versions() ? geo.span() : 0, 0) {}

  // Adds the READ of the whole leaf at `a` to `b`; finish_read() decodes it once `b` ran.
  void read_into(Batch& b, GlobalAddress a) {
    if (g->versions())
      b.read(a + 8, &enc[8], g->image_bytes()).hint(read_hint);
    else
      b.read(a + 8, w.data(), g->image_bytes()).hint(read_hint);
  }
  void finish_read() {
    if (g->versions()) decode();
  }
  // Adds the WRITE of entry i (an entry write: with versions its EV is incremented).
  void write_entry(Batch& b, GlobalAddress a, uint32_t i) {
    if (!g->versions()) {
      b.write(a + g->entry_offset(i), entry(i), g->remote_entry_bytes()).hint(write_hint);
      return;
    }
    ev[i] = (ev[i] + 1) & 0xf;
    encode_entry(i);
    b.write(a + g->entry_offset(i), &enc[g->entry_offset(i)], g->remote_entry_bytes())
        .hint(write_hint);
  }
  // Adds the WRITE of the whole leaf (a node write: the image carries its new nv); with
  // `with_lock`, the lock word (0, free) too, as a new leaf is written.
  void write_image(Batch& b, GlobalAddress a, bool with_lock) {
    static const uint64_t kZero = 0;
    if (!g->versions()) {
      if (with_lock) b.write(a, &kZero, 8).hint(write_hint);
      b.write(a + 8, w.data(), g->image_bytes()).hint(write_hint);
      return;
    }
    encode();
    if (with_lock) {
      std::memset(enc.data(), 0, 8);
      b.write(a, enc.data(), 8 + g->image_bytes()).hint(write_hint);
    } else {
      b.write(a + 8, &enc[8], g->image_bytes()).hint(write_hint);
    }
  }

  uint8_t nv() const { return sealed::meta_of(&w[0]).nv; }
  bool hi_inf() const { return sealed::meta_of(&w[0]).flags & LeafGeometry::kHiInf; }
  View lo() const { return kp.get(&w[1]); }
  View hi() const { return kp.get(&w[1 + g->kw()]); }
  GlobalAddress sibling() const { return GlobalAddress::from_raw(w[1 + 2 * g->kw()]); }
  bool covers(View k) const { return k >= lo() && (hi_inf() || k < hi()); }

  uint64_t* entry(uint32_t i) { return &w[g->entry_word(i)]; }
  const uint64_t* entry(uint32_t i) const { return &w[g->entry_word(i)]; }
  bool occupied(uint32_t i) const {
    return sealed::meta_of(entry(i)).flags & LeafGeometry::kOccupied;
  }
  View key(uint32_t i) const { return kp.get(entry(i) + 1); }
  const uint64_t* value(uint32_t i) const { return entry(i) + 1 + g->kw(); }

  // Every object sealed (with versions: decoded untorn) and carrying the header's nv.
  bool consistent() const {
    if (torn) return false;
    if (!sealed::verify(&w[0], g->header_words() - 1)) return false;
    uint8_t v = nv();
    for (uint32_t i = 0; i < g->span(); ++i) {
      if (!sealed::verify(entry(i), g->kw() + g->vw())) return false;
      if (sealed::meta_of(entry(i)).nv != v) return false;
    }
    return true;
  }
  // The first occupied entry holding k, or -1. An integer key compares before the flags (one
  // word, rarely equal); a byte key only in an occupied slot.
  int find(View k) const {
    const uint64_t* e = entry(0);
    const size_t ew = g->ew();
    for (uint32_t i = 0, n = g->span(); i < n; ++i, e += ew) {
      const bool occ = sealed::meta_of(e).flags & LeafGeometry::kOccupied;
      if constexpr (K::kBytes) {
        if (occ && kp.get(e + 1) == k) return static_cast<int>(i);
      } else {
        if (kp.get(e + 1) == k && occ) return static_cast<int>(i);
      }
    }
    return -1;
  }

  // A search's verdict on the image: the entry holding k, or one of these.
  static constexpr int kAbsent = -1, kOutside = -2, kTorn = -3;
  // A search checks only the objects its answer rests on, as the paper's search checks the node
  // versions and the found entry's versions: the header (fences, sibling) sealed, and the entry
  // of k sealed with the header's nv. Both carrying one nv means no node write (which rewrites
  // every object with nv+1) completed between the READ taking them, so the pair is what
  // consistent() would accept of them; the other entries do not bear on the answer. Only
  // "absent" needs every object (an entry torn, or from another node image, could hide k), so it
  // takes consistent(). With versions, decode() checked every line (torn) and sealed the objects
  // locally: the same verdicts. kOutside: k is not within the (checked) fences; lo(), hi() and
  // sibling() may be used. `check` false (fault injection) accepts the image as it is.
  int search(View k, bool check = true) const {
    if (check && torn) return kTorn;
    if (check && !sealed::verify(&w[0], g->header_words() - 1)) return kTorn;
    if (!covers(k)) return kOutside;
    const int i = find(k);
    if (i < 0) return !check || consistent() ? kAbsent : kTorn;
    if (check &&
        (!sealed::verify(entry(i), g->kw() + g->vw()) || sealed::meta_of(entry(i)).nv != nv()))
      return kTorn;
    return i;
  }
  int free_slot() const {
    for (uint32_t i = 0; i < g->span(); ++i)
      if (!occupied(i)) return static_cast<int>(i);
    return -1;
  }

  // lo and hi may view this image's own fences (reseal_all): put() copies overlapping bytes.
  void set_header(uint8_t nv, View lo, View hi, bool hi_inf, GlobalAddress sib) {
    const uint32_t kw = g->kw();
    kp.put(&w[1], lo);
    kp.put(&w[1 + kw], hi);
    w[1 + 2 * kw] = sib.raw();
    sealed::seal(
        &w[0], g->header_words() - 1,
        Meta{nv, static_cast<uint8_t>(LeafGeometry::kValid | (hi_inf ? LeafGeometry::kHiInf : 0)),
             0});
  }
  // k may view this entry's own key (reseal_all).
  void set_entry(uint32_t i, uint8_t nv, bool occ, View k, const uint64_t* val) {
    uint64_t* e = entry(i);
    const uint32_t kw = g->kw();
    kp.put(e + 1, occ ? k : View{});
    for (uint32_t j = 0; j < g->vw(); ++j) e[1 + kw + j] = occ ? val[j] : 0;
    sealed::seal(e, kw + g->vw(),
                 Meta{nv, static_cast<uint8_t>(occ ? LeafGeometry::kOccupied : 0), 0});
  }
  // sync = versions: the local image from the remote bytes and back. Decoded objects are sealed
  // locally, so the tree's checks are the same in both settings; nv is the 4-bit NV.
  void decode() {
    if constexpr (!K::kBytes) decode_versions();  // a byte-key leaf has none (LeafGeometry)
  }
  void encode_entry(uint32_t i) {
    if constexpr (!K::kBytes) encode_entry_versions(i);
  }
  void decode_versions() {
    torn = false;
    const uint8_t nv = enc[8] >> 4;
    if ((enc[g->entry_offset(g->span())] >> 4) != nv) torn = true;
    Key lo, hi;
    uint64_t sib;
    std::memcpy(&lo, &enc[10], 8);
    std::memcpy(&hi, &enc[18], 8);
    std::memcpy(&sib, &enc[26], 8);
    set_header(nv, View(lo), View(hi), enc[9] & LeafGeometry::kHiInf, GlobalAddress::from_raw(sib));
    scratch_.assign(g->vw(), 0);
    for (uint32_t i = 0; i < g->span(); ++i) {
      const uint8_t* e = &enc[g->entry_offset(i)];
      const uint8_t front = e[0], back = e[g->entry_bytes() - 1];
      if ((front >> 4) != nv || (front & 0xf) != (back & 0xf)) torn = true;
      Key k;
      std::memcpy(&k, e + 1, 8);
      std::memcpy(scratch_.data(), e + 9, g->value_size());
      set_entry(i, nv, (back >> 4) & LeafGeometry::kOccupied, View(k), scratch_.data());
      ev[i] = front & 0xf;
    }
  }
  void encode_entry_versions(uint32_t i) {
    uint8_t* e = &enc[g->entry_offset(i)];
    const Meta m = sealed::meta_of(entry(i));
    e[0] = static_cast<uint8_t>((m.nv & 0xf) << 4 | ev[i]);
    Key k = w[g->entry_word(i) + 1];
    std::memcpy(e + 1, &k, 8);
    std::memcpy(e + 9, value(i), g->value_size());
    e[g->entry_bytes() - 1] =
        static_cast<uint8_t>((m.flags & LeafGeometry::kOccupied) << 4 | ev[i]);
  }
  void encode() {
    const uint8_t v = static_cast<uint8_t>((nv() & 0xf) << 4);
    enc[8] = v;
    enc[9] = sealed::meta_of(&w[0]).flags;
    std::memcpy(&enc[10], &w[1], 24);  // lo, hi, sibling
    for (uint32_t i = 0; i < g->span(); ++i) encode_entry(i);
    enc[g->entry_offset(g->span())] = v;
  }

  // Re-seal every object with a new node version (a node write).
  void reseal_all(uint8_t nv) {
    set_header(nv, lo(), hi(), hi_inf(), sibling());
    for (uint32_t i = 0; i < g->span(); ++i) {
      bool occ = occupied(i);
      set_entry(i, nv, occ, key(i), value(i));
    }
  }

 private:
  std::vector<uint64_t> scratch_;  // a decoded value (kept: no allocation per READ once warm)
};

}  // namespace dmrt::sherman
