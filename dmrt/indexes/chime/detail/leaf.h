// CHIME hopscotch leaf: layout with metadata replicas every H entries, lock word with piggybacked
// vacancy bitmap and argmax, local image with fetched ranges, and the hopscotch moves.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmrt/indexes/common/btree_keys.h"
#include "dmrt/indexes/common/value_slot.h"
#include "dmrt/runtime/address.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/sealed_object.h"
#include "dmrt/runtime/verbs.h"

namespace dmrt::chime {

using sealed::Meta;

// Remote layout, in 8-byte words (the lock word is last, so a node write can carry the unlock):
//   group g = replica(meta(nv, valid), sibling) + H entries
//   entry i = meta(nv, flags = occupied|tombstone, extra = hop bitmap), key[kw], value[vw]
//   (key[kw]: one word for integer keys; a btree::ByteKeys slot for key_size > 8: the bytes
//   zero-padded to key_size, then a 2-byte length, rounded up to words)
//   lock word = lock:1 (bit 63) | argmax:A | vacancy:V     (A = ceil(log2 span), V = min(63-A,
//   span)); with lock holders (Options::lock_holders) lock:1 | holder:8 (bits 55-62, the
//   holder's Client::process_tag) | argmax:A | vacancy:V, V = min(55-A, span)
// That is the local image, and the remote layout with sync = checksum: each entry and replica
// is sealed (checksum + nv). With sync = versions the remote node is the paper's (§4.1, §4.5;
// notes chime.md §2.1, §2.4): replica = ver 1, valid 1, sibling 8 (10 B); entry = ver 1,
// hop 2 (hop bitmap in bits 0..13, occupied bit 14, tombstone bit 15), key 8, value (11 B +
// value_size; byte keys: key_size bytes zero-padded + 2-byte length, 5 B + key_size + value_size,
// so a wide entry spans several lines, each line version a copy of the entry's); the first 64 bytes
// verbatim, then a cache-line version byte before every 63 data bytes, a copy of the version of the
// object holding the line's first data byte; the lock word at the next 8-byte boundary. A version
// byte = node-level version NV (high 4 bits) | entry-level version EV (low 4 bits). The image is
// decoded on every read and encoded on every write (LeafImage::read_into, write_into); the tree
// logic sees the same local image either way. Level 1/2 of the three-level synchronization = "every
// fetched object is whole (checksum, or all its version bytes equal) and all carry one nv"; level 3
// = the home entry's hop bitmap equals the keys found hashing to that home. No fence keys in
// leaves: sibling-based validation (see tree.h); with it off (Options::sibling_validation, the
// paper's baseline) each replica also holds the leaf's low and high fence keys.
//
// A physical word range [from, to) of a node's local image.
struct Segment {
  size_t from, to;
};

// The few segments one access reads or writes (an entry range wraps around the leaf's end at
// most once; an insert adds the argmax entry), kept inline: a search allocated two vectors
// before (shm profile of CHIME).
class Segments {
 public:
  static constexpr size_t kMax = 4;
  Segments() = default;
  Segments(std::initializer_list<Segment> l) {
    for (Segment s : l) push_back(s);
  }
  void push_back(Segment s) {
    if (n_ == kMax) throw LimitError("chime: more than 4 segments in one access");
    s_[n_++] = s;
  }
  size_t size() const { return n_; }
  const Segment* begin() const { return s_; }
  const Segment* end() const { return s_ + n_; }
  const Segment& operator[](size_t i) const { return s_[i]; }

 private:
  Segment s_[kMax]{};
  size_t n_ = 0;
};

class Geometry {
 public:
  static constexpr uint8_t kValid = 1;
  static constexpr uint8_t kOccupied = 1, kTombstone = 2;
  static constexpr uint64_t kLock = uint64_t{1} << 63;

  static constexpr uint32_t kMaxVersionsH = 14;  // the hop field's two top bits are flags
  static constexpr uint32_t kReplicaBytes = 10;  // paper layout: ver, valid, sibling

  // key_size 8: integer keys (one word); else byte keys of up to key_size bytes. `fences`
  // (sibling-based validation off, the paper's baseline of §4.2.3): every replica also carries
  // the leaf's two fence keys, slots of key_size + 1 bytes (a split's max+1 separator).
  static constexpr unsigned kHolderShift = 55;
  static constexpr uint64_t kHolderMask = uint64_t{0xff} << kHolderShift;

  Geometry(uint32_t span, uint32_t h, uint32_t value_size, bool versions = false,
           uint32_t key_size = kIntegerKeyBytes, bool fences = false, bool holders = false)
      : span_(span),
        h_(h),
        vw_(btree::value_words(value_size)),
        value_size_(value_size),
        key_size_(key_size),
        kw_(key_size == kIntegerKeyBytes ? 1 : btree::ByteKeys{key_size}.words()),
        kb_(key_size == kIntegerKeyBytes ? 8 : key_size + 2),
        fkw_(!fences                        ? 0
             : key_size == kIntegerKeyBytes ? 1
                                            : btree::ByteKeys{key_size + 1}.words()),
        fkb_(!fences                        ? 0
             : key_size == kIntegerKeyBytes ? 8
                                            : key_size + 3),
        rw_(2 + 2 * fkw_),
        versions_(versions),
        holders_(holders) {
    if (key_size == 0 || key_size > kMaxKeyBytes)
      throw ConfigError("chime: key_size must be in [1, " + std::to_string(kMaxKeyBytes) + "]");
    if (span < 2 || span > 1024) throw ConfigError("chime: span must be in [2, 1024]");
    if (h < 1 || h > 16 || h > span)
      throw ConfigError("chime: neighborhood must be in [1, min(16, span)]");
    if (versions && h > kMaxVersionsH)
      throw ConfigError(
          "chime: sync=versions needs neighborhood <= 14 (the paper's 2-byte hop "
          "field also carries the entry's occupied and tombstone bits); use "
          "sync=checksum");
    groups_ = (span + h - 1) / h;
    abits_ = static_cast<uint32_t>(std::bit_width(span - 1));
    vbits_ = std::min<uint32_t>((holders ? kHolderShift : 63) - abits_, span);
  }
  // Lock holders (Options::lock_holders): the bits a lock word names its holder with, and the
  // holder a word names (0: none, or no holders in this layout).
  bool holders() const { return holders_; }
  uint64_t holder_bits(uint8_t tag) const { return holders_ ? uint64_t{tag} << kHolderShift : 0; }
  uint64_t holder_mask() const { return holders_ ? kHolderMask : 0; }
  // The bits a lock word is held by: the lock bit and, with holders, the holder's tag.
  uint64_t lock_mask() const { return kLock | holder_mask(); }
  uint8_t holder(uint64_t lw) const {
    return holders_ ? static_cast<uint8_t>((lw & kHolderMask) >> kHolderShift) : 0;
  }
  uint32_t span() const { return span_; }
  uint32_t h() const { return h_; }
  uint32_t vw() const { return vw_; }
  uint32_t kw() const { return kw_; }  // words of a key slot
  uint32_t ew() const { return 1 + kw_ + vw_; }
  uint32_t key_size() const { return key_size_; }
  bool byte_keys() const { return key_size_ != kIntegerKeyBytes; }
  uint32_t value_size() const { return value_size_; }
  uint32_t groups() const { return groups_; }
  // A replica: meta, sibling, then (fences only) the low and high fence key slots of fkw() words.
  bool fences() const { return fkw_ != 0; }
  uint32_t fkw() const { return fkw_; }
  uint32_t rw() const { return rw_; }  // words of a replica
  size_t replica_word(uint32_t g) const { return size_t{g} * rw_ + size_t{g} * h_ * ew(); }
  size_t entry_word(uint32_t i) const { return size_t{i / h_ + 1} * rw_ + size_t{i} * ew(); }
  size_t node_words() const { return size_t{groups_} * rw_ + size_t{span_} * ew(); }
  size_t lock_word() const { return node_words(); }  // in the local image
  bool versions() const { return versions_; }
  // Byte offset of the lock word in the remote node, and the node's size with it.
  uint64_t lock_offset() const {
    return versions_ ? (enc_bytes() + 7) & ~uint64_t{7} : 8 * node_words();
  }
  uint64_t remote_bytes() const { return lock_offset() + 8; }

  // The paper's layout (sync = versions): decoded offsets of objects, and where a decoded byte
  // lies in the encoded node (after the first 64 bytes, one line version byte per 63).
  uint32_t entry_bytes() const { return 3 + kb_ + value_size_; }
  // A key slot in the paper's layout (kb_ bytes: 8, or key_size + the 2-byte length) from and to
  // the local slot (kw words).
  void key_to_wire(const uint64_t* slot, uint8_t* out) const {
    if (!byte_keys()) return void(std::memcpy(out, slot, 8));
    std::memcpy(out, slot, key_size_);
    std::memcpy(out + key_size_, reinterpret_cast<const uint8_t*>(slot) + kw_ * 8 - 2, 2);
  }
  void key_from_wire(const uint8_t* in, uint64_t* slot) const {
    if (!byte_keys()) return void(std::memcpy(slot, in, 8));
    std::fill(slot, slot + kw_, 0);
    std::memcpy(slot, in, key_size_);
    std::memcpy(reinterpret_cast<uint8_t*>(slot) + kw_ * 8 - 2, in + key_size_, 2);
  }
  // A replica in the paper's layout: 10 B, and with fences two fence slots of fkb bytes (8 for
  // integer keys, else key_size + 1 bytes and a 2-byte length).
  uint32_t fkb() const { return fkb_; }
  uint32_t replica_bytes() const { return kReplicaBytes + 2 * fkb_; }
  // The encoding buffer one object needs at most (an entry, or a replica with fences).
  static constexpr size_t kMaxObjectBytes =
      std::max<size_t>(3 + kMaxKeyBytes + 2 + 1024, kReplicaBytes + 2 * (kMaxKeyBytes + 3));
  size_t dec_replica(uint32_t g) const {
    return size_t{g} * (replica_bytes() + size_t{h_} * entry_bytes());
  }
  size_t dec_entry(uint32_t i) const {
    return size_t{i / h_ + 1} * replica_bytes() + size_t{i} * entry_bytes();
  }
  size_t dec_bytes() const {
    return size_t{groups_} * replica_bytes() + size_t{span_} * entry_bytes();
  }
  // Metadata bytes per entry of the remote leaf, the paper's Fig. 16 metric (its §4.5 formula
  // 3 + KV/63 + 10/H, + 2 key_size/H with fence keys): the node's bytes before the lock word
  // less the entries' key and value bytes, over span. So: per entry its version byte and hop
  // field (byte keys: and the key's 2-byte length), the replicas (with fences, their fence
  // keys) and the line version bytes; like the formula, not the lock word.
  double metadata_bytes_per_entry() const {
    const uint64_t kv = uint64_t{span_} * ((byte_keys() ? key_size_ : 8) + value_size_);
    const uint64_t node = versions_ ? enc_bytes() : 8 * node_words();
    return static_cast<double>(node - kv) / span_;
  }
  static size_t enc(size_t d) { return d < 64 ? d : d + 1 + (d - 64) / 63; }
  static bool line_first(size_t d) {
    return d >= 64 && (d - 64) % 63 == 0;
  }  // after a line version
  // Decoded bytes from `d` on that are contiguous in the encoding (up to the next line version).
  static size_t run_from(size_t d) { return d < 64 ? 64 - d : 63 - (d - 64) % 63; }
  size_t enc_bytes() const { return enc(dec_bytes() - 1) + 1; }
  // The objects (replicas, entries) a local-image segment covers, in order, as (is_replica,
  // index, word) steps: the segment starts and ends at object boundaries.
  template <class Fn>
  void for_objects(Segment s, Fn&& fn) const;
  // Remote byte range [first, second) of a local-image segment (which may end with the lock word).
  std::pair<uint64_t, uint64_t> remote_range(Segment s) const;
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
  // Byte keys: the same from a hash of the key's bytes.
  std::pair<uint32_t, uint16_t> home_fp(std::string_view k) const {
    uint64_t x = hash_bytes(k);
    return {static_cast<uint32_t>(x % span_), static_cast<uint16_t>(x >> 48)};
  }
  uint32_t home(std::string_view k) const { return home_fp(k).first; }

 private:
  uint32_t span_, h_, vw_, value_size_, key_size_, kw_, kb_, fkw_, fkb_, rw_, groups_, abits_,
      vbits_;
  bool versions_;
  bool holders_;
};

template <class Fn>
void Geometry::for_objects(Segment s, Fn&& fn) const {
  const size_t group_words = rw_ + size_t{h_} * ew();
  for (size_t w = s.from; w < std::min(s.to, node_words());) {
    uint32_t g = static_cast<uint32_t>(w / group_words);
    size_t off = w - size_t{g} * group_words;
    if (off == 0) {
      fn(true, g, w);
      w += rw_;
    } else {
      fn(false, static_cast<uint32_t>(g * h_ + (off - rw_) / ew()), w);
      w += ew();
    }
  }
}

inline std::pair<uint64_t, uint64_t> Geometry::remote_range(Segment s) const {
  if (!versions_) return {8 * s.from, 8 * s.to};
  size_t first = SIZE_MAX, last = 0;  // decoded [first, last)
  for_objects(s, [&](bool rep, uint32_t i, size_t) {
    size_t d = rep ? dec_replica(i) : dec_entry(i);
    first = std::min(first, d);
    last = std::max(last, d + (rep ? replica_bytes() : entry_bytes()));
  });
  if (s.to > node_words())
    return {first == SIZE_MAX ? lock_offset() : enc(first) - line_first(first), lock_offset() + 8};
  return {enc(first) - line_first(first), enc(last - 1) + 1};
}

// Local image of one leaf; `have` marks which entries/replicas were fetched by the last reads.
// K: the key policy of its key slots (btree::IntKeys or btree::ByteKeys, dmrt/indexes/common/
// btree_keys.h); keys are read in place as K::View.
template <class K = btree::IntKeys>
struct LeafImage {
  using View = typename K::View;
  const Geometry* g;
  K keys;
  K fkeys;  // fence key slots (fences only): one byte longer than a key, for max+1 separators
  std::vector<uint64_t> w;
  std::vector<uint8_t> have_e, have_r;
  // The entries whose have_e is set, in the order marked, with their word in `w` (capacity span:
  // no allocation after construction). consistent() and forget() walk these instead of all span
  // entries, and a search fetches one entry or one neighborhood of a 64-entry leaf (shm profile).
  struct Marked {
    uint32_t i, word;
  };
  std::vector<Marked> marked;

  // sync = versions only: the remote bytes at their node offsets (reads land and writes are
  // encoded here), each entry's entry-level version, the segments read and not yet decoded, and
  // whether a decoded object's version bytes disagreed (a torn object).
  std::vector<uint8_t> enc;
  std::vector<uint8_t> ev;
  std::vector<Segment> pending;
  bool torn = false;
  // Where a port to non-coherent memory flushes (FlushPoint): the READs' and the WRITEs' hints.
  FlushHint read_hint = FlushHint::kNone, write_hint = FlushHint::kNone;

  explicit LeafImage(const Geometry& geo, K k = K{})
      : g(&geo),
        keys(k),
        fkeys(fence_keys(geo)),
        w(geo.node_words() + 1, 0),
        have_e(geo.span()),
        have_r(geo.groups()),
        marked(),
        enc(geo.versions() ? geo.remote_bytes() : 0, 0),
        ev(geo.versions() ? geo.span() : 0, 0) {
    marked.reserve(geo.span());
  }

  static K fence_keys(const Geometry& geo) {
    if constexpr (K::kBytes)
      return K{geo.key_size() + 1};
    else
      return K{};
  }

  void forget() {
    for (const Marked& m : marked) have_e[m.i] = 0;
    marked.clear();
    std::fill(have_r.begin(), have_r.end(), 0);
    pending.clear();
    torn = false;
  }

  // Adds to `b` the READ of segment `s` of the leaf at `a` (its remote bytes: the local words
  // with checksums, the encoded range with versions) and marks what it fetches; finish_reads()
  // decodes once the batch ran.
  void read_into(Batch& b, GlobalAddress a, Segment s) {
    mark(s);
    auto [from, to] = g->remote_range(s);
    if (!g->versions()) {
      b.read(a + from, &w[s.from], static_cast<uint32_t>(to - from)).hint(read_hint);
      return;
    }
    b.read(a + from, &enc[from], static_cast<uint32_t>(to - from)).hint(read_hint);
    pending.push_back(s);
  }
  void finish_reads() {
    for (Segment s : pending) decode(s);
    pending.clear();
  }
  // Adds to `b` the WRITE of segment `s`. With versions, an entry write increments the entry-level
  // version of every entry it writes; a node write (`node_write`) carries the image's nv alone.
  // A segment that ends with the lock word releases it (or rewrites it held): Batch::release.
  void write_into(Batch& b, GlobalAddress a, Segment s, bool node_write) {
    auto [from, to] = g->remote_range(s);
    const bool lock = s.to > g->node_words();
    const void* src = &w[s.from];
    if (g->versions()) {
      encode(s, !node_write);
      src = &enc[from];
    }
    const auto len = static_cast<uint32_t>(to - from);
    if (lock)
      b.release(a + from, src, len).hint(write_hint);
    else
      b.write(a + from, src, len).hint(write_hint);
  }
  // The objects lying whole inside `s`. Group by group (a replica, then its H entries: entry
  // r*H + j is at word replica_word(r) + rw + j*ew), skipping the groups that end before `s`:
  // a search's segment is one neighbourhood, and a loop over every entry of the leaf with
  // entry_word()'s division each cost more than the rest of the search (shm profile of CHIME).
  // The first group and, in each group, the first and last entry inside `s` are computed, not
  // searched: the groups before the first end at or before s.from.
  void mark(Segment s) {
    const uint32_t h = g->h(), ew = g->ew(), span = g->span();
    const size_t rw_words = g->rw(), group_words = rw_words + size_t{h} * ew;
    for (uint32_t r = static_cast<uint32_t>(s.from / group_words); r < g->groups(); ++r) {
      const size_t rw = size_t{r} * group_words;  // replica_word(r)
      if (rw >= s.to) break;
      if (rw >= s.from && rw + rw_words <= s.to) have_r[r] = 1;
      // Entry j of the group is at e0 + j*ew; it is inside when e >= s.from and e + ew <= s.to.
      const size_t e0 = rw + rw_words;
      const size_t n = std::min<size_t>(h, span - size_t{r} * h);
      const size_t lo = s.from <= e0 ? 0 : (s.from - e0 + ew - 1) / ew;
      const size_t hi = s.to < e0 + ew ? 0 : std::min(n, (s.to - e0 - ew) / ew + 1);
      for (size_t j = lo; j < hi; ++j) {
        const uint32_t i = r * h + static_cast<uint32_t>(j);
        if (have_e[i]) continue;
        have_e[i] = 1;
        marked.push_back({i, static_cast<uint32_t>(e0 + j * ew)});
      }
    }
  }
  bool whole() const { return marked.size() == g->span(); }

  [[gnu::always_inline]] uint64_t* entry(uint32_t i) { return &w[g->entry_word(i)]; }
  [[gnu::always_inline]] const uint64_t* entry(uint32_t i) const { return &w[g->entry_word(i)]; }
  [[gnu::always_inline]] Meta emeta(uint32_t i) const { return sealed::meta_of(entry(i)); }
  bool occupied(uint32_t i) const { return emeta(i).flags & Geometry::kOccupied; }
  bool tomb(uint32_t i) const { return emeta(i).flags & Geometry::kTombstone; }
  uint16_t hop(uint32_t i) const { return emeta(i).extra; }
  View key(uint32_t i) const { return keys.get(entry(i) + 1); }
  const uint64_t* value(uint32_t i) const { return entry(i) + 1 + g->kw(); }
  const uint64_t* replica(uint32_t r) const { return &w[g->replica_word(r)]; }
  GlobalAddress sibling_of(uint32_t r) const { return GlobalAddress::from_raw(replica(r)[1]); }
  // Fences only: replica r's fence keys, the leaf's keys lie in [low, high); high means nothing
  // on the rightmost leaf (no sibling).
  View low_fence(uint32_t r) const { return fkeys.get(replica(r) + 2); }
  View high_fence(uint32_t r) const { return fkeys.get(replica(r) + 2 + g->fkw()); }

  // k may view this entry's own slot (a tombstone keeps its key).
  void set_entry(uint32_t i, uint8_t nv, uint8_t flags, uint16_t hop, View k, const uint64_t* val) {
    uint64_t* e = entry(i);
    const uint32_t kw = g->kw();
    if (flags & Geometry::kOccupied)
      keys.put(e + 1, k);
    else
      std::fill(e + 1, e + 1 + kw, 0);
    for (uint32_t j = 0; j < g->vw(); ++j)
      e[1 + kw + j] = (flags & Geometry::kOccupied) && val ? val[j] : 0;
    sealed::seal(e, kw + g->vw(), Meta{nv, flags, hop});
  }
  void reseal(uint32_t i, uint8_t nv, uint8_t flags, uint16_t hop) {
    uint64_t* e = entry(i);
    sealed::seal(e, g->kw() + g->vw(), Meta{nv, flags, hop});
  }
  // With fences, the fence slots keep what they hold (set_fences sets them).
  void set_replica(uint32_t r, uint8_t nv, GlobalAddress sib) {
    uint64_t* p = &w[g->replica_word(r)];
    p[1] = sib.raw();
    sealed::seal(p, g->rw() - 1, Meta{nv, Geometry::kValid, 0});
  }
  void set_fences(uint32_t r, View low, View high) {
    uint64_t* p = &w[g->replica_word(r)];
    fkeys.put(p + 2, low);
    fkeys.put(p + 2 + g->fkw(), high);
    sealed::seal(p, g->rw() - 1, sealed::meta_of(p));
  }

  // Levels 1 and 2: every fetched object is whole (sealed; with versions, decoded untorn) and
  // carries one node version. Returns it.
  bool consistent(uint8_t* nv_out) const {
    if (torn) return false;
    int nv = -1;
    for (uint32_t r = 0; r < g->groups(); ++r) {
      if (!have_r[r]) continue;
      if (!sealed::verify(replica(r), g->rw() - 1)) return false;
      int v = sealed::meta_of(replica(r)).nv;
      if (nv >= 0 && v != nv) return false;
      nv = v;
    }
    // Every fetched entry, in the order marked: the verdict and the nv do not depend on order.
    const size_t pw = g->kw() + g->vw();
    for (const Marked& m : marked) {
      const uint64_t* e = &w[m.word];
      if (!sealed::verify(e, pw)) return false;
      int v = sealed::meta_of(e).nv;
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
    std::vector<View> ks;
    for (uint32_t i = 0; i < g->span(); ++i) {
      if (!occupied(i)) continue;
      uint32_t h0 = g->home(key(i));
      uint32_t d = g->dist(h0, i);
      if (d >= g->h()) return false;
      status[h0] |= uint16_t(1u << d);
      ks.push_back(key(i));
    }
    for (uint32_t i = 0; i < g->span(); ++i)
      if (status[i] != hop(i)) return false;
    std::sort(ks.begin(), ks.end());
    return std::adjacent_find(ks.begin(), ks.end()) == ks.end();
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

  // sync = versions: the local objects of segment `s` from the encoded bytes (a torn object
  // sets `torn`), and back. Decoded objects are sealed locally so that the tree's checks are the
  // same in both settings; nv is the 4-bit NV.
  void decode(Segment s) {
    uint8_t buf[Geometry::kMaxObjectBytes];
    g->for_objects(s, [&](bool rep, uint32_t i, size_t) {
      const size_t d0 = rep ? g->dec_replica(i) : g->dec_entry(i);
      const size_t n = rep ? g->replica_bytes() : g->entry_bytes();
      const uint8_t v = enc[Geometry::enc(d0)];
      // Line by line: a run of decoded bytes is contiguous in the encoding up to the next line
      // version, which must equal the object's own version byte (else the object is torn).
      for (size_t k = 0; k < n;) {
        const size_t d = d0 + k, run = std::min(n - k, Geometry::run_from(d));
        if (Geometry::line_first(d) && enc[Geometry::enc(d) - 1] != v) torn = true;
        std::memcpy(buf + k, &enc[Geometry::enc(d)], run);
        k += run;
      }
      const uint8_t nv = v >> 4;
      if (rep) {
        uint64_t sib;
        std::memcpy(&sib, buf + 2, 8);
        uint64_t* p = &w[g->replica_word(i)];
        for (uint32_t f = 0; f < 2 * g->fkw(); f += g->fkw())
          fence_from_wire(buf + Geometry::kReplicaBytes + (f ? g->fkb() : 0), p + 2 + f);
        set_replica(i, nv, GlobalAddress::from_raw(sib));
        return;
      }
      uint16_t hf;
      std::memcpy(&hf, buf + 1, 2);
      uint64_t* e = entry(i);
      const size_t kb = g->entry_bytes() - 3 - g->value_size();
      std::fill(e + 1 + g->kw(), e + 1 + g->kw() + g->vw(), 0);
      std::memcpy(e + 1 + g->kw(), buf + 3 + kb, g->value_size());
      g->key_from_wire(buf + 3, e + 1);
      sealed::seal(e, g->kw() + g->vw(),
                   Meta{nv, static_cast<uint8_t>(hf >> 14), static_cast<uint16_t>(hf & 0x3fff)});
      ev[i] = v & 0xf;
    });
    if (s.to > g->node_words()) std::memcpy(&w[g->lock_word()], &enc[g->lock_offset()], 8);
  }
  void encode(Segment s, bool bump_entries) {
    uint8_t buf[Geometry::kMaxObjectBytes];
    g->for_objects(s, [&](bool rep, uint32_t i, size_t) {
      const size_t d0 = rep ? g->dec_replica(i) : g->dec_entry(i);
      size_t n;
      if (rep) {
        n = g->replica_bytes();
        buf[0] = static_cast<uint8_t>((sealed::meta_of(replica(i)).nv & 0xf) << 4);
        buf[1] = Geometry::kValid;
        uint64_t sib = replica(i)[1];
        std::memcpy(buf + 2, &sib, 8);
        for (uint32_t f = 0; f < 2 * g->fkw(); f += g->fkw())
          fence_to_wire(replica(i) + 2 + f, buf + Geometry::kReplicaBytes + (f ? g->fkb() : 0));
      } else {
        n = g->entry_bytes();
        if (bump_entries) ev[i] = (ev[i] + 1) & 0xf;
        Meta m = emeta(i);
        buf[0] = static_cast<uint8_t>((m.nv & 0xf) << 4 | ev[i]);
        uint16_t hf = static_cast<uint16_t>((m.extra & 0x3fff) | (m.flags & 3) << 14);
        std::memcpy(buf + 1, &hf, 2);
        const size_t kb = g->entry_bytes() - 3 - g->value_size();
        g->key_to_wire(entry(i) + 1, buf + 3);
        std::memcpy(buf + 3 + kb, value(i), g->value_size());
      }
      for (size_t k = 0; k < n;) {  // line by line, as decode()
        const size_t d = d0 + k, run = std::min(n - k, Geometry::run_from(d));
        if (Geometry::line_first(d)) enc[Geometry::enc(d) - 1] = buf[0];
        std::memcpy(&enc[Geometry::enc(d)], buf + k, run);
        k += run;
      }
    });
    if (s.to > g->node_words()) std::memcpy(&enc[g->lock_offset()], &w[g->lock_word()], 8);
  }

  // A fence slot (fkw words) from and to its fkb wire bytes: the bytes, then the 2-byte length
  // (integer keys: the word).
  void fence_to_wire(const uint64_t* slot, uint8_t* out) const {
    const size_t n = g->fkb();
    if (!g->byte_keys()) return void(std::memcpy(out, slot, 8));
    std::memcpy(out, slot, n - 2);
    std::memcpy(out + n - 2, reinterpret_cast<const uint8_t*>(slot) + g->fkw() * 8 - 2, 2);
  }
  void fence_from_wire(const uint8_t* in, uint64_t* slot) const {
    const size_t n = g->fkb();
    if (!g->byte_keys()) return void(std::memcpy(slot, in, 8));
    std::fill(slot, slot + g->fkw(), 0);
    std::memcpy(slot, in, n - 2);
    std::memcpy(reinterpret_cast<uint8_t*>(slot) + g->fkw() * 8 - 2, in + n - 2, 2);
  }

  // Physical segments covering entries [a .. b] (circular), including the replicas between.
  Segments entry_range(uint32_t a, uint32_t b, bool with_group_replica) const {
    size_t start =
        with_group_replica && a % g->h() == 0 ? g->replica_word(a / g->h()) : g->entry_word(a);
    if (a <= b) return {{start, g->entry_word(b) + g->ew()}};
    return {{start, g->node_words()}, {0, g->entry_word(b) + g->ew()}};
  }
};

}  // namespace dmrt::chime
