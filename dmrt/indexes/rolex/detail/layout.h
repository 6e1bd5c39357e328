// ROLEX remote layout: meta block, leaf region (FAA-allocated fixed-size leaves), model groups with
// LT/SLT.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "dmrt/indexes/rolex/detail/plr.h"
#include "dmrt/runtime/address.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::rolex {

inline constexpr Key kEmptyKey = ~uint64_t{0};                 // reserved: never a user key
inline constexpr uint64_t kMetaMagic = 0x31584554454c4f52ull;  // "ROLEXET1"
inline constexpr uint32_t kSltSlots = 256;  // SLT[0] = slot_use, SLT[1..255] synonym entries

// ---- LT / SLT entries ---------------------------------------------------------------------------
// | lock:1 | retired:1 | valid:1 | unused:5 | next SLT slot:8 | holder:8 | leaf number:40 |
// The lock bit of a trained leaf's LT entry guards its whole synonym chain. `retired` is set (with
// lock) by the retraining service on every LT entry of a replaced model: the chain is then frozen
// for good and writers re-read the model pointer. `holder` is set with the lock bit and names the
// holder's process (Client::process_tag; 0 when none is known), so that a waiter can ask whether
// it died (issue 39); an unlocked entry has none.
namespace entry {
inline constexpr uint64_t kLock = uint64_t{1} << 63;
inline constexpr uint64_t kRetired = uint64_t{1} << 62;
inline constexpr uint64_t kValid = uint64_t{1} << 61;  // set in every written entry (0 = unwritten)
inline constexpr unsigned kHolderShift = 40;
inline constexpr uint64_t kHolderMask = uint64_t{0xff} << kHolderShift;
inline constexpr uint64_t kLeafMask = (uint64_t{1} << kHolderShift) - 1;  // 2^40 leaves at most
inline uint64_t make(uint64_t leaf, uint32_t next) {
  return kValid | (uint64_t{next} << 48) | (leaf & kLeafMask);
}
inline bool valid(uint64_t e) {
  return e & kValid;
}
inline uint64_t leaf(uint64_t e) {
  return e & kLeafMask;
}
inline uint32_t next(uint64_t e) {
  return static_cast<uint32_t>((e >> 48) & 0xff);
}
inline uint64_t with_next(uint64_t e, uint32_t n) {
  return (e & ~(uint64_t{0xff} << 48)) | (uint64_t{n} << 48);
}
inline bool locked(uint64_t e) {
  return e & kLock;
}
inline bool retired(uint64_t e) {
  return e & kRetired;
}
inline uint64_t unlocked(uint64_t e) {
  return e & ~(kLock | kRetired | kHolderMask);
}
inline uint64_t holder_bits(uint8_t tag) {
  return uint64_t{tag} << kHolderShift;
}
inline uint8_t holder(uint64_t e) {
  return static_cast<uint8_t>((e & kHolderMask) >> kHolderShift);
}
}  // namespace entry

// ---- meta block (pointed to by layout::root_slot(node, options.root_slot)) ----------------------
struct Meta {
  uint64_t magic = 0;
  uint64_t groups = 0;       // model groups (fixed at creation)
  uint64_t group_keys = 0;   // raw address: groups x 8B smallest key of each group (immutable)
  uint64_t group_table = 0;  // raw address: groups x 8B model pointers (swapped on retraining)
  uint64_t leaf_region = 0;  // raw address: [alloc_num][total_leaves][pad..64][leaf 0][leaf 1]...
  uint64_t leaf_bytes = 0;
  uint64_t cirq = 0;  // raw address: [tail][pad][entries...]; entry = group + 1, 0 = empty
  uint64_t cirq_slots = 0;
  uint64_t value_size = 0, leaf_slots = 0, epsilon = 0, retrain_threshold = 0;
  // Counters bumped with FAA (by compute nodes in batches they post anyway, and by the service).
  uint64_t retrainings = 0;
  uint64_t synonym_leaves = 0;
  uint64_t retrain_requests = 0;
  uint64_t upper = 0;  // raw address: the upper models over group_keys (upper.h; immutable)
};
static_assert(sizeof(Meta) == 128);
inline constexpr uint64_t kMetaRetrainings = offsetof(Meta, retrainings);
inline constexpr uint64_t kMetaSynonyms = offsetof(Meta, synonym_leaves);
inline constexpr uint64_t kMetaRequests = offsetof(Meta, retrain_requests);
inline constexpr uint64_t kLeafRegionHeader = 64;  // alloc_num @0, total_leaves @8

// ---- leaves ------------------------------------------------------------------------------------
// [checksum:8][count:32 | next:32][keys: slots x 8][values: slots x vwords x 8]. Keys of the
// occupied prefix are sorted; readers validate the checksum (a torn read fails it) and retry.
// `next` repeats the SLT slot of the leaf's chain successor (A14 hardening): it is written in the
// same WRITE as the data, so a reader whose cached chain disagrees with a leaf it read knows its
// synonym table is stale, whatever order the table words were read in.
struct LeafGeometry {
  uint32_t slots = 16;
  uint32_t value_size = 8;
  uint32_t vwords() const { return (value_size + 7) / 8; }
  uint32_t words() const { return 2 + slots + slots * vwords(); }
  uint32_t bytes() const { return words() * 8; }
};

inline uint64_t leaf_checksum(const uint64_t* w, size_t words) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ words;
  for (size_t i = 1; i < words; ++i) {
    uint64_t x = w[i] + 0x632be59bd9b4e019ull * (i + 1);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    h = (h ^ x) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
  }
  return h | 1;  // never 0: an all-zero (never written) leaf does not validate
}

// A leaf image in private memory.
class Leaf {
 public:
  explicit Leaf(const LeafGeometry& g) : g_(g), w_(g.words(), 0) {}
  uint64_t* data() { return w_.data(); }
  const uint64_t* data() const { return w_.data(); }
  uint32_t bytes() const { return g_.bytes(); }
  bool valid() const { return w_[0] == leaf_checksum(w_.data(), w_.size()) && count() <= g_.slots; }
  void seal() { w_[0] = leaf_checksum(w_.data(), w_.size()); }
  void clear() {
    std::fill(w_.begin(), w_.end(), 0);
    for (uint32_t i = 0; i < g_.slots; ++i) w_[2 + i] = kEmptyKey;
  }
  uint32_t count() const { return static_cast<uint32_t>(w_[1]); }
  uint32_t next() const { return static_cast<uint32_t>(w_[1] >> 32); }
  void set_next(uint32_t n) { w_[1] = (w_[1] & 0xffffffffull) | (uint64_t{n} << 32); }
  void set_count(uint32_t n) { w_[1] = (w_[1] & ~0xffffffffull) | n; }
  bool full() const { return count() >= g_.slots; }
  Key key(uint32_t i) const { return w_[2 + i]; }
  uint64_t* value(uint32_t i) { return &w_[2 + g_.slots + i * g_.vwords()]; }
  const uint64_t* value(uint32_t i) const { return &w_[2 + g_.slots + i * g_.vwords()]; }
  // Index of `k`, or count() when absent.
  uint32_t find(Key k) const {
    uint32_t n = count();
    const uint64_t* b = &w_[2];
    uint32_t i = static_cast<uint32_t>(std::lower_bound(b, b + n, k) - b);
    return (i < n && b[i] == k) ? i : n;
  }
  uint32_t lower_bound(Key k) const {
    const uint64_t* b = &w_[2];
    return static_cast<uint32_t>(std::lower_bound(b, b + count(), k) - b);
  }
  void insert_at(uint32_t pos, Key k, const uint64_t* val) {
    uint32_t n = count(), vw = g_.vwords();
    for (uint32_t i = n; i > pos; --i) {
      w_[2 + i] = w_[2 + i - 1];
      std::memcpy(value(i), value(i - 1), vw * 8);
    }
    w_[2 + pos] = k;
    std::memcpy(value(pos), val, vw * 8);
    set_count(n + 1);
  }
  void erase_at(uint32_t pos) {
    uint32_t n = count(), vw = g_.vwords();
    for (uint32_t i = pos; i + 1 < n; ++i) {
      w_[2 + i] = w_[2 + i + 1];
      std::memcpy(value(i), value(i + 1), vw * 8);
    }
    w_[2 + n - 1] = kEmptyKey;
    std::memset(value(n - 1), 0, vw * 8);
    set_count(n - 1);
  }
  // Moves entries [from, count) to the front of the empty leaf `dst`.
  void move_tail(uint32_t from, Leaf& dst) {
    uint32_t n = count();
    for (uint32_t i = from; i < n; ++i) dst.insert_at(dst.count(), key(i), value(i));
    for (uint32_t i = n; i > from; --i) erase_at(i - 1);
  }

 private:
  LeafGeometry g_;
  std::vector<uint64_t> w_;
};

inline void store_value(uint64_t* dst, std::string_view v, uint32_t value_size) {
  std::memset(dst, 0, (value_size + 7) / 8 * 8);
  std::memcpy(dst, v.data(), std::min<size_t>(v.size(), value_size));
}
inline void load_value(const uint64_t* src, uint32_t value_size, std::string& out) {
  out.assign(reinterpret_cast<const char*>(src), value_size);
}

// ---- model group object (immutable except the SLT and the LT entries) ---------------------------
// [header 64B][SLT 256 x 8][LT n x 8][boundaries n x 8][segments m x 40]
// boundaries[j]: chain j (trained leaf j and its synonyms) owns exactly the keys in
// [boundaries[j], boundaries[j+1]); boundaries[0] is the group's smallest key. They are the first
// keys of the trained leaves at training time, so every training label satisfies Eq. 1 and the
// owner of any key lies within the model's L_range widened by one leaf to the left (README).
struct ModelHeader {
  uint64_t magic = 0;
  uint64_t leaves = 0;  // |LT|
  uint64_t segments = 0;
  uint64_t group = 0;
  uint64_t generation = 0;    // 0 for bulk load, +1 per retraining
  uint64_t retrain_lock = 0;  // CAS 0 -> retrain_lock_word(tag) by this model's one retrainer
  uint64_t pad[2] = {};
};
static_assert(sizeof(ModelHeader) == 64);
inline constexpr uint64_t kModelMagic = 0x4c45444f4d584c52ull;
inline constexpr uint64_t kRetrainLockOffset = offsetof(ModelHeader, retrain_lock);
// The retrain lock as its holder takes it: 1, and the holder's process tag (Client::process_tag;
// 0 for the memory node's service, whose death is the memory node's) in bits 8-15, so that a
// writer that finds the group frozen by a process declared dead can take the retraining over.
inline uint64_t retrain_lock_word(uint8_t tag) {
  return 1 | uint64_t{tag} << 8;
}
inline uint8_t retrain_lock_tag(uint64_t word) {
  return static_cast<uint8_t>(word >> 8);
}
inline constexpr uint64_t kSltOffset = 64;
inline constexpr uint64_t kLtOffset = kSltOffset + 8ull * kSltSlots;
inline uint64_t model_bytes(uint64_t leaves, uint64_t segments) {
  return kLtOffset + 16 * leaves + 40 * segments;
}

// What the model object holds, in private memory (built by training, parsed by compute nodes).
struct ModelImage {
  ModelHeader hdr;
  std::vector<uint64_t> slt;  // 256 words
  std::vector<uint64_t> lt;
  std::vector<Key> boundaries;
  std::vector<Segment> segments;

  std::vector<uint64_t> serialize() const {
    std::vector<uint64_t> w(model_bytes(lt.size(), segments.size()) / 8, 0);
    std::memcpy(w.data(), &hdr, 64);
    std::copy(slt.begin(), slt.end(), w.begin() + kSltOffset / 8);
    std::copy(lt.begin(), lt.end(), w.begin() + kLtOffset / 8);
    std::copy(boundaries.begin(), boundaries.end(), w.begin() + kLtOffset / 8 + lt.size());
    uint64_t* s = w.data() + kLtOffset / 8 + 2 * lt.size();
    for (const Segment& seg : segments) {
      s[0] = seg.first_key;
      std::memcpy(&s[1], &seg.slope, 8);
      std::memcpy(&s[2], &seg.intercept, 8);
      s[3] = seg.leaf_lo;
      s[4] = seg.leaf_hi;
      s += 5;
    }
    return w;
  }
  // `w` starts at the model object; it must hold model_bytes() bytes.
  static ModelImage parse(const uint64_t* w) {
    ModelImage m;
    std::memcpy(static_cast<void*>(&m.hdr), w, 64);
    uint64_t n = m.hdr.leaves;
    m.slt.assign(w + kSltOffset / 8, w + kSltOffset / 8 + kSltSlots);
    m.lt.assign(w + kLtOffset / 8, w + kLtOffset / 8 + n);
    m.boundaries.assign(w + kLtOffset / 8 + n, w + kLtOffset / 8 + 2 * n);
    const uint64_t* s = w + kLtOffset / 8 + 2 * n;
    for (uint64_t i = 0; i < m.hdr.segments; ++i, s += 5) {
      Segment seg;
      seg.first_key = s[0];
      std::memcpy(&seg.slope, &s[1], 8);
      std::memcpy(&seg.intercept, &s[2], 8);
      seg.leaf_lo = s[3];
      seg.leaf_hi = s[4];
      m.segments.push_back(seg);
    }
    return m;
  }
};

// Eq. 3: a leaf's address from its number.
inline GlobalAddress leaf_address(GlobalAddress region, uint64_t leaf_bytes, uint64_t leaf) {
  return region + (kLeafRegionHeader + leaf * leaf_bytes);
}

// Trains a group's model from its leaves in chain order: leaf_keys[j] = the keys of new trained
// leaf j (non-empty except possibly a lone leaf). Labels are j * slots + slot (Eq. 2's positions).
inline void train_group(ModelImage& m, const std::vector<std::vector<Key>>& leaf_keys, Key group_lo,
                        uint32_t epsilon, uint32_t slots) {
  std::vector<Key> keys;
  std::vector<double> labels;
  m.boundaries.assign(leaf_keys.size(), group_lo);
  for (size_t j = 0; j < leaf_keys.size(); ++j) {
    if (j > 0) m.boundaries[j] = leaf_keys[j].front();
    for (size_t s = 0; s < leaf_keys[j].size(); ++s) {
      keys.push_back(leaf_keys[j][s]);
      labels.push_back(double(j) * slots + double(s));
    }
  }
  m.segments = train_plr(keys, labels, epsilon, slots);
  if (m.segments.empty()) m.segments.push_back(Segment{group_lo, 0, 0, 0, 0});
  m.segments.front().leaf_lo = 0;
  m.segments.back().leaf_hi = leaf_keys.size() - 1;
  m.hdr.segments = m.segments.size();
}

}  // namespace dmrt::rolex
