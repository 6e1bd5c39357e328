// ROLEX remote access shared by compute nodes and the retraining service: meta, chains, leaf reads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "dmrt/indexes/rolex/detail/layout.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::rolex {

// Where an index lives, as read from its meta block.
struct Remote {
  NodeId node = 0;
  GlobalAddress meta_addr;
  Meta meta;
  LeafGeometry geo;
  uint64_t total_leaves = 0;  // leaf region capacity (its second header word)

  GlobalAddress leaf_region() const { return GlobalAddress::from_raw(meta.leaf_region); }
  GlobalAddress alloc_word() const { return leaf_region(); }
  GlobalAddress leaf(uint64_t n) const { return leaf_address(leaf_region(), meta.leaf_bytes, n); }
  GlobalAddress group_ptr(uint64_t g) const {
    return GlobalAddress::from_raw(meta.group_table) + 8 * g;
  }
  GlobalAddress group_key(uint64_t g) const {
    return GlobalAddress::from_raw(meta.group_keys) + 8 * g;
  }
  GlobalAddress cirq_tail() const { return GlobalAddress::from_raw(meta.cirq); }
  GlobalAddress cirq_head() const { return GlobalAddress::from_raw(meta.cirq) + 8; }
  // The retraining service's claim (dmrt/runtime/service_claim.h): owner token, then heartbeat, in
  // the CirQ's header, whose one consumer it is.
  GlobalAddress cirq_owner() const { return GlobalAddress::from_raw(meta.cirq) + 16; }
  GlobalAddress cirq_entry(uint64_t i) const {
    return GlobalAddress::from_raw(meta.cirq) + 64 + 8 * (i % meta.cirq_slots);
  }
  GlobalAddress counter(uint64_t off) const { return meta_addr + off; }

  // Reads the meta block through root slot `root_slot` of `node`; false when none is published.
  template <Transport T>
  static bool load(Client<T>& c, NodeId node, unsigned root_slot, Remote& out) {
    // Published by another host, perhaps while this one polled: always seen from memory.
    constexpr FlushHint kInv = FlushHint::kInvalidate;
    uint64_t raw = c.template read_value<uint64_t>(layout::root_slot(node, root_slot), kInv);
    if (raw == 0) return false;
    out.node = node;
    out.meta_addr = GlobalAddress::from_raw(raw);
    c.read(out.meta_addr, &out.meta, sizeof(Meta), kInv);
    if (out.meta.magic != kMetaMagic) return false;
    out.geo.slots = static_cast<uint32_t>(out.meta.leaf_slots);
    out.geo.value_size = static_cast<uint32_t>(out.meta.value_size);
    out.total_leaves = c.template read_value<uint64_t>(out.leaf_region() + 8, kInv);
    return out.total_leaves <= entry::kLeafMask + 1;  // a table entry's leaf number: 40 bits
  }
};

// Objects of many words (a group's model, the upper models, the group keys) move in pieces of
// 64 KiB, one round trip each, so that no round trip outgrows a verbs staging slot (64 KiB by
// default; a larger one registers its buffer on demand).
inline constexpr size_t kWordsPerRoundTrip = size_t{1} << 13;

template <Transport T, class W>
void read_words(Client<T>& c, GlobalAddress a, std::vector<W>& w,
                FlushHint hint = FlushHint::kNone) {
  static_assert(sizeof(W) == 8);
  for (size_t off = 0; off < w.size(); off += kWordsPerRoundTrip)
    c.read(a + off * 8, w.data() + off,
           static_cast<uint32_t>(std::min(kWordsPerRoundTrip, w.size() - off) * 8), hint);
}

template <Transport T>
void write_words(Client<T>& c, GlobalAddress a, const std::vector<uint64_t>& w,
                 FlushHint hint = FlushHint::kNone) {
  for (size_t off = 0; off < w.size(); off += kWordsPerRoundTrip)
    c.write(a + off * 8, w.data() + off,
            static_cast<uint32_t>(std::min(kWordsPerRoundTrip, w.size() - off) * 8), hint);
}

// Several batches to one node posted together: one round trip (Client::run(span)), order kept.
class MultiBatch {
 public:
  Batch& next() {
    if (batches_.empty() || batches_.back().size() == Batch::kMaxVerbs) batches_.emplace_back();
    return batches_.back();
  }
  // `hint`: where a port to non-coherent memory flushes (FlushHint, rolex::FlushPoint).
  void read(GlobalAddress a, void* dst, uint32_t len, FlushHint hint = FlushHint::kNone) {
    next().read(a, dst, len).hint(hint);
  }
  void write(GlobalAddress a, const void* src, uint32_t len, FlushHint hint = FlushHint::kNone) {
    next().write(a, src, len).hint(hint);
  }
  void release(GlobalAddress a, const void* src, uint32_t len) { next().release(a, src, len); }
  void faa(GlobalAddress a, uint64_t add, uint64_t* old) { next().faa(a, add, old); }
  void cas(GlobalAddress a, uint64_t exp, uint64_t des, uint64_t* old) {
    next().cas(a, exp, des, old);
  }
  template <Transport T>
  void run(Client<T>& c) {
    if (!batches_.empty()) c.run(std::span<Batch>(batches_));
    batches_.clear();
  }
  bool empty() const { return batches_.empty(); }
  // Drops verbs posted but not run (a reused MultiBatch whose last run threw).
  void clear() { batches_.clear(); }

 private:
  std::vector<Batch> batches_;
};

// The leaf READs of one search or scan batch. With `coalesce`, leaves with consecutive numbers
// (consecutive addresses in the leaf region, Eq. 3) are fetched by one READ per run, as §4.2 says
// ROLEX reads "via one RDMA READ"; without, one READ per leaf in the doorbell batch (§3.4). The
// bytes and the round trip are the same; the verbs (and their wire headers) are fewer. The
// buffers are kept between operations (no allocation once warm).
class LeafReads {
 public:
  template <class Links, class Leaves>
  // `hint`: each READ's (FlushPoint::kLeafInvalidate).
  void post(MultiBatch& mb, const Remote& r, const Links& links, Leaves& leaves, bool coalesce,
            FlushHint hint = FlushHint::kNone) {
    const uint32_t bytes = r.geo.bytes();
    coalesced_ = coalesce && links.size() > 1;
    if (!coalesced_) {
      for (size_t i = 0; i < links.size(); ++i)
        mb.read(r.leaf(links[i].leaf), leaves[i].data(), bytes, hint);
      return;
    }
    order_.resize(links.size());
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<uint32_t>(i);
    // By leaf number, stable; an insertion sort: a few dozen links at most, and no temporary
    // buffer (std::stable_sort allocates one per call).
    for (size_t i = 1; i < order_.size(); ++i) {
      const uint32_t o = order_[i];
      size_t p = i;
      for (; p > 0 && links[o].leaf < links[order_[p - 1]].leaf; --p) order_[p] = order_[p - 1];
      order_[p] = o;
    }
    words_ = bytes / 8;
    buf_.resize(order_.size() * words_);
    for (size_t p = 0; p < order_.size();) {
      size_t e = p + 1;
      while (e < order_.size() && links[order_[e]].leaf == links[order_[e - 1]].leaf + 1) ++e;
      mb.read(r.leaf(links[order_[p]].leaf), buf_.data() + p * words_,
              static_cast<uint32_t>((e - p) * bytes), hint);
      p = e;
    }
  }
  // After the batch ran: the images into their leaves.
  template <class Leaves>
  void finish(Leaves& leaves) const {
    if (!coalesced_) return;
    for (size_t p = 0; p < order_.size(); ++p)
      std::memcpy(leaves[order_[p]].data(), buf_.data() + p * words_, words_ * 8);
  }

 private:
  bool coalesced_ = false;
  size_t words_ = 0;
  std::vector<uint32_t> order_;
  std::vector<uint64_t> buf_;
};

// One leaf of a chain: its number and its own SLT slot (0 = the trained leaf, held in the LT).
struct ChainLink {
  uint64_t leaf = 0;
  uint32_t slot = 0;
  uint32_t next = 0;  // successor's SLT slot (0 = last)
};

// Walks chain of LT entry `lt` through `slt`; false when the tables are caught mid-update (an
// unwritten entry or a loop), so the caller re-reads them.
inline bool walk_chain(uint64_t lt, const uint64_t* slt, std::vector<ChainLink>& out) {
  out.clear();
  if (!entry::valid(lt)) return false;
  out.push_back({entry::leaf(lt), 0, entry::next(lt)});
  uint32_t nx = entry::next(lt);
  while (nx != 0) {
    if (nx >= kSltSlots || out.size() > kSltSlots) return false;
    uint64_t e = slt[nx];
    if (!entry::valid(e)) return false;
    out.push_back({entry::leaf(e), nx, entry::next(e)});
    nx = entry::next(e);
  }
  return true;
}

// A leaf image agrees with the chain it was read for.
inline bool leaf_matches(const Leaf& l, const ChainLink& link) {
  return l.valid() && l.next() == link.next;
}

}  // namespace dmrt::rolex
