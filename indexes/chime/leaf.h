// CHIME hopscotch leaf: layout with metadata replicas every H entries, lock word with piggybacked
// vacancy bitmap and argmax, local image with fetched ranges, and the hopscotch moves.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "indexes/common/value_slot.h"
#include "runtime/address.h"
#include "runtime/error.h"
#include "runtime/kv.h"
#include "runtime/sealed_object.h"

namespace dmrt::chime {

using sealed::Meta;

// Remote layout, in 8-byte words (the lock word is last, so a node write can carry the unlock):
//   group g = replica(meta(nv, valid), sibling) + H entries
//   entry i = meta(nv, flags = occupied|tombstone, extra = hop bitmap), key, value[vw]
//   lock word = lock:1 (bit 63) | argmax:A | vacancy:V     (A = ceil(log2 span), V = min(63-A,
//   span))
// Each entry and replica is sealed (checksum + nv), replacing the paper's per-cache-line version
// bytes: level 1/2 of the three-level synchronization = "all fetched objects verify and carry one
// nv"; level 3 = the home entry's hop bitmap equals the keys found hashing to that home.
// No fence keys in leaves: sibling-based validation (see tree.h).
class Geometry {
 public:
  static constexpr uint8_t kValid = 1;
  static constexpr uint8_t kOccupied = 1, kTombstone = 2;
  static constexpr uint64_t kLock = uint64_t{1} << 63;

  Geometry(uint32_t span, uint32_t h, uint32_t value_size)
      : span_(span), h_(h), vw_(btree::value_words(value_size)), value_size_(value_size) {
    if (span < 2 || span > 1024) throw ConfigError("chime: span must be in [2, 1024]");
    if (h < 1 || h > 16 || h > span)
      throw ConfigError("chime: neighborhood must be in [1, min(16, span)]");
    groups_ = (span + h - 1) / h;
    abits_ = static_cast<uint32_t>(std::bit_width(span - 1));
    vbits_ = std::min<uint32_t>(63 - abits_, span);
  }
  uint32_t span() const { return span_; }
  uint32_t h() const { return h_; }
  uint32_t vw() const { return vw_; }
  uint32_t ew() const { return 2 + vw_; }
  uint32_t value_size() const { return value_size_; }
  uint32_t groups() const { return groups_; }
  size_t replica_word(uint32_t g) const { return size_t{g} * 2 + size_t{g} * h_ * ew(); }
  size_t entry_word(uint32_t i) const { return size_t{i / h_ + 1} * 2 + size_t{i} * ew(); }
  size_t node_words() const { return size_t{groups_} * 2 + size_t{span_} * ew(); }
  size_t lock_word() const { return node_words(); }
  uint64_t remote_bytes() const { return 8 * (node_words() + 1); }
  uint32_t dist(uint32_t from, uint32_t to) const { return (to + span_ - from) % span_; }

  // Vacancy bitmap: entry i is covered by bit i*V/span; bit 1 = bucket full.
  uint32_t vbits() const { return vbits_; }
  uint32_t bucket(uint32_t i) const { return static_cast<uint32_t>(uint64_t{i} * vbits_ / span_); }
  uint32_t bucket_start(uint32_t b) const {
    return static_cast<uint32_t>((uint64_t{b} * span_ + vbits_ - 1) / vbits_);
  }
  uint32_t bucket_end(uint32_t b) const {
    return b + 1 >= vbits_ ? span_ - 1 : bucket_start(b + 1) - 1;
  }
  uint32_t argmax(uint64_t lw) const {
    return static_cast<uint32_t>((lw >> vbits_) & ((1ull << abits_) - 1));
  }
  uint64_t with_argmax(uint64_t lw, uint32_t i) const {
    uint64_t m = ((1ull << abits_) - 1) << vbits_;
    return (lw & ~m) | (uint64_t{i} << vbits_);
  }
  bool bucket_full(uint64_t lw, uint32_t b) const { return (lw >> b) & 1; }
  uint64_t with_bucket(uint64_t lw, uint32_t b, bool full) const {
    return full ? lw | (1ull << b) : lw & ~(1ull << b);
  }

  // Home entry and 16-bit fingerprint from independent bits of one hash.
  std::pair<uint32_t, uint16_t> home_fp(Key k) const {
    uint64_t x = mix64(k ^ 0x5bd1e9955bd1e995ull);
    return {static_cast<uint32_t>(x % span_), static_cast<uint16_t>(x >> 48)};
  }
  uint32_t home(Key k) const { return home_fp(k).first; }

 private:
  uint32_t span_, h_, vw_, value_size_, groups_, abits_, vbits_;
};

// A physical word range [from, to) of a node.
struct Segment {
  size_t from, to;
};

// Local image of one leaf; `have` marks which entries/replicas were fetched by the last reads.
struct LeafImage {
  const Geometry* g;
  std::vector<uint64_t> w;
  std::vector<uint8_t> have_e, have_r;

  explicit LeafImage(const Geometry& geo)
      : g(&geo), w(geo.node_words() + 1, 0), have_e(geo.span()), have_r(geo.groups()) {}

  void forget() {
    std::fill(have_e.begin(), have_e.end(), 0);
    std::fill(have_r.begin(), have_r.end(), 0);
  }
  void mark(Segment s) {
    for (uint32_t i = 0; i < g->span(); ++i)
      if (g->entry_word(i) >= s.from && g->entry_word(i) + g->ew() <= s.to) have_e[i] = 1;
    for (uint32_t r = 0; r < g->groups(); ++r)
      if (g->replica_word(r) >= s.from && g->replica_word(r) + 2 <= s.to) have_r[r] = 1;
  }
  bool whole() const {
    return std::all_of(have_e.begin(), have_e.end(), [](uint8_t x) { return x; });
  }

  uint64_t* entry(uint32_t i) { return &w[g->entry_word(i)]; }
  const uint64_t* entry(uint32_t i) const { return &w[g->entry_word(i)]; }
  Meta emeta(uint32_t i) const { return sealed::meta_of(entry(i)); }
  bool occupied(uint32_t i) const { return emeta(i).flags & Geometry::kOccupied; }
  bool tomb(uint32_t i) const { return emeta(i).flags & Geometry::kTombstone; }
  uint16_t hop(uint32_t i) const { return emeta(i).extra; }
  Key key(uint32_t i) const { return entry(i)[1]; }
  const uint64_t* value(uint32_t i) const { return entry(i) + 2; }
  const uint64_t* replica(uint32_t r) const { return &w[g->replica_word(r)]; }
  GlobalAddress sibling_of(uint32_t r) const { return GlobalAddress::from_raw(replica(r)[1]); }

  void set_entry(uint32_t i, uint8_t nv, uint8_t flags, uint16_t hop, Key k, const uint64_t* val) {
    uint64_t* e = entry(i);
    e[1] = (flags & Geometry::kOccupied) ? k : 0;
    for (uint32_t j = 0; j < g->vw(); ++j)
      e[2 + j] = (flags & Geometry::kOccupied) && val ? val[j] : 0;
    sealed::seal(e, 1 + g->vw(), Meta{nv, flags, hop});
  }
  void reseal(uint32_t i, uint8_t nv, uint8_t flags, uint16_t hop) {
    uint64_t* e = entry(i);
    sealed::seal(e, 1 + g->vw(), Meta{nv, flags, hop});
  }
  void set_replica(uint32_t r, uint8_t nv, GlobalAddress sib) {
    uint64_t* p = &w[g->replica_word(r)];
    p[1] = sib.raw();
    sealed::seal(p, 1, Meta{nv, Geometry::kValid, 0});
  }

  // Levels 1 and 2: every fetched object is sealed and carries one node version. Returns it.
  bool consistent(uint8_t* nv_out) const {
    int nv = -1;
    for (uint32_t r = 0; r < g->groups(); ++r) {
      if (!have_r[r]) continue;
      if (!sealed::verify(replica(r), 1)) return false;
      int v = sealed::meta_of(replica(r)).nv;
      if (nv >= 0 && v != nv) return false;
      nv = v;
    }
    for (uint32_t i = 0; i < g->span(); ++i) {
      if (!have_e[i]) continue;
      if (!sealed::verify(entry(i), 1 + g->vw())) return false;
      int v = emeta(i).nv;
      if (nv >= 0 && v != nv) return false;
      nv = v;
    }
    if (nv_out) *nv_out = static_cast<uint8_t>(nv < 0 ? 0 : nv);
    return true;
  }
  // Sibling from any fetched replica (all equal under one nv).
  GlobalAddress sibling() const {
    for (uint32_t r = 0; r < g->groups(); ++r)
      if (have_r[r]) return sibling_of(r);
    return GlobalAddress::null();
  }
  bool any_replica() const {
    return std::any_of(have_r.begin(), have_r.end(), [](uint8_t x) { return x; });
  }

  // Level 3: the home entry's hop bitmap must equal which of its H slots hold keys homed there.
  bool bitmap_matches(uint32_t home) const {
    uint16_t status = 0;
    for (uint32_t d = 0; d < g->h(); ++d) {
      uint32_t i = (home + d) % g->span();
      if (occupied(i) && g->home(key(i)) == home) status |= uint16_t(1u << d);
    }
    return status == hop(home);
  }

  // Level 3 for a whole-leaf read (scan): a READ racing a hop-range WRITE can see a key's old
  // slot already cleared and its new slot not yet written, with every entry sealed under one nv.
  // Every home's bitmap must match, and no key may show twice (a torn move can also duplicate a
  // key while hiding another of the same home behind a matching bitmap).
  bool all_bitmaps_match() const {
    std::vector<uint16_t> status(g->span(), 0);
    std::vector<Key> keys;
    for (uint32_t i = 0; i < g->span(); ++i) {
      if (!occupied(i)) continue;
      uint32_t h0 = g->home(key(i));
      uint32_t d = g->dist(h0, i);
      if (d >= g->h()) return false;
      status[h0] |= uint16_t(1u << d);
      keys.push_back(key(i));
    }
    for (uint32_t i = 0; i < g->span(); ++i)
      if (status[i] != hop(i)) return false;
    std::sort(keys.begin(), keys.end());
    return std::adjacent_find(keys.begin(), keys.end()) == keys.end();
  }

  // Whole-image rebuild of hop bitmaps, after a split moved or dropped entries.
  void rebuild_hops(uint8_t nv) {
    std::vector<uint16_t> hops(g->span(), 0);
    for (uint32_t i = 0; i < g->span(); ++i) {
      if (!occupied(i)) continue;
      uint32_t h0 = g->home(key(i));
      uint32_t d = g->dist(h0, i);
      if (d >= g->h()) throw Error("chime: leaf entry outside its neighborhood");
      hops[h0] |= uint16_t(1u << d);
    }
    for (uint32_t i = 0; i < g->span(); ++i) reseal(i, nv, emeta(i).flags, hops[i]);
  }
  // Exact lock word (unlocked) for a whole image.
  uint64_t exact_lock_word() const {
    uint64_t lw = 0;
    for (uint32_t b = 0; b < g->vbits(); ++b) {
      bool full = true;
      for (uint32_t i = g->bucket_start(b); i <= g->bucket_end(b); ++i) full = full && occupied(i);
      lw = g->with_bucket(lw, b, full);
    }
    int best = -1;
    for (uint32_t i = 0; i < g->span(); ++i)
      if (occupied(i) && (best < 0 || key(i) > key(static_cast<uint32_t>(best))))
        best = static_cast<int>(i);
    return g->with_argmax(lw, best < 0 ? 0 : static_cast<uint32_t>(best));
  }

  // Physical segments covering entries [a .. b] (circular), including the replicas between.
  std::vector<Segment> entry_range(uint32_t a, uint32_t b, bool with_group_replica) const {
    size_t start =
        with_group_replica && a % g->h() == 0 ? g->replica_word(a / g->h()) : g->entry_word(a);
    if (a <= b) return {{start, g->entry_word(b) + g->ew()}};
    return {{start, g->node_words()}, {0, g->entry_word(b) + g->ew()}};
  }
};

}  // namespace dmrt::chime
