// sim::EventQueue: the simulator's pending events, earliest first, ties in push order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dmrt::sim {

// A two-level calendar queue. Events are pushed and popped twice per simulated verb, and nearly
// every one is due within a few tens of microseconds of the current time (a wire latency, a NIC
// queue), so:
//  * the near future is cut into kBuckets buckets of 2^kShift ps each, in a ring (the fine ring);
//    an event is linked into its bucket (kept sorted, which is almost always an append) and
//    popped from the earliest non-empty one, where a binary heap of ~1,000 events pays ten levels
//    of mispredicted comparisons per pop;
//  * the next kSlots x 2^kSlotBits buckets are grouped into coarse slots, unsorted lists in push
//    order: an event due there is appended, and the whole slot is linked into the fine ring once
//    the fine ring reaches all of it (a saturated NIC's queue delays its replies past the fine
//    ring: when they went through the heap below, moving them in was 11% of a RACE run);
//  * anything later waits in a heap and moves into its coarse slot as the slots reach it.
// Events live in one pool of nodes and move between the levels by relinking, never by copying.
// The order is exactly (time, push order), as a heap on (time, sequence) gives, so a run is the
// same event for event: a bucket's list is sorted by time, and equal times keep their push order
// because every list receives its events in push order (a slot's or bucket's events from the
// level above all arrive before any direct push to it). Storage grows to the peak number of
// pending events and is then reused: no allocation per event in a steady state.
template <class T, unsigned kShiftBits = 11, uint64_t kRingBuckets = 4096, unsigned kSlotBits = 11,
          uint64_t kSlotCount = 512>
class EventQueue {
 public:
  // 2.048 ns per bucket and a fine ring of 8.4 us by default: about one event per bucket in the
  // densest runs measured (RACE, 10 x 32 clients, ~160 events per virtual us), and every wire
  // latency within the ring. Coarse slots of 4.2 us, 512 of them: 2.1 ms ahead.
  static constexpr unsigned kShift = kShiftBits;
  static constexpr uint64_t kBuckets = kRingBuckets;
  static constexpr unsigned kSlotShift = kShiftBits + kSlotBits;  // ps of a coarse slot, log2
  static constexpr uint64_t kSlots = kSlotCount;
  static_assert((kBuckets & (kBuckets - 1)) == 0 && (kSlots & (kSlots - 1)) == 0);
  // A slot moves into the fine ring whole: it must fit next to the bucket being popped.
  static_assert((uint64_t{1} << kSlotBits) <= kBuckets / 2);

  bool empty() const { return size() == 0; }
  size_t size() const { return near_ + coarse_ + far_.size(); }

  // The earliest event; only when !empty().
  uint64_t top_time() const {
    return near_ ? nodes_[fine_[find() & kMask].head].time : later().time;
  }
  const T& top() const {
    return near_ ? nodes_[fine_[find() & kMask].head].payload : later().payload;
  }

  // `time` is never earlier than the last event popped (the simulator's clock only advances).
  void push(uint64_t time, const T& payload) {
    const uint64_t slot = time >> kSlotShift;
    if (slot < mig_) {  // within the fine ring
      const uint32_t n = alloc(time, payload);
      const uint64_t b = time >> kShift;
      insert(b, n);
      ++near_;
      if (b < peek_) peek_ = b;
    } else if (slot < mig_ + kSlots) {
      append(slot, alloc(time, payload));
      ++coarse_;
    } else {
      far_.push_back(Far{time, seq_, payload});
      std::push_heap(far_.begin(), far_.end(), Later{});
    }
    ++seq_;
  }

  // Removes the earliest event (only when !empty()): returns its time, its payload in `out`.
  uint64_t pop(T& out) {
    if (near_ == 0) jump();
    const uint64_t b = find();
    if (b != cur_) {
      cur_ = b;
      advance();  // what it links in is due after bucket b
    }
    List& l = fine_[b & kMask];
    const uint32_t n = l.head;
    Node& x = nodes_[n];
    l.head = x.next;
    if (l.head == kNil) l.tail = kNil;
    out = x.payload;
    const uint64_t time = x.time;
    x.next = free_;
    free_ = n;
    --near_;
    return time;
  }

 private:
  static constexpr uint32_t kNil = ~uint32_t{0};
  static constexpr uint64_t kMask = kBuckets - 1;
  struct Node {
    uint64_t time;
    T payload;
    uint32_t next;
  };
  struct List {
    uint32_t head = kNil, tail = kNil;
  };
  struct Far {
    uint64_t time;
    uint64_t seq;
    T payload;
  };
  struct Later {
    bool operator()(const Far& a, const Far& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  struct Ref {
    uint64_t time;
    const T& payload;
  };

  uint32_t alloc(uint64_t time, const T& payload) {
    uint32_t n = free_;
    if (n != kNil) {
      free_ = nodes_[n].next;
      // The next free node was freed longer ago, usually out of the cache: a batch of verbs
      // pushes several events in a row.
      if (free_ != kNil) __builtin_prefetch(&nodes_[free_]);
      nodes_[n].time = time;
      nodes_[n].payload = payload;
    } else {
      n = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back(Node{time, payload, kNil});
    }
    return n;
  }
  // The earliest non-empty bucket (only when near_ > 0): buckets in [cur_, peek_) are empty.
  uint64_t find() const {
    while (fine_[peek_ & kMask].head == kNil) ++peek_;
    return peek_;
  }
  // Links node n into fine bucket b, after every event of the bucket due no later.
  void insert(uint64_t b, uint32_t n) {
    List& l = fine_[b & kMask];
    Node& x = nodes_[n];
    x.next = kNil;
    if (l.head == kNil) {
      l.head = l.tail = n;
    } else if (nodes_[l.tail].time <= x.time) {
      nodes_[l.tail].next = n;
      l.tail = n;
    } else {  // earlier than the bucket's last (rare): walk to its place; never the new tail
      uint32_t* link = &l.head;
      while (nodes_[*link].time <= x.time) link = &nodes_[*link].next;
      x.next = *link;
      *link = n;
    }
  }
  void append(uint64_t slot, uint32_t n) {
    List& s = slots_[slot & (kSlots - 1)];
    nodes_[n].next = kNil;
    if (s.head == kNil)
      s.head = n;
    else
      nodes_[s.tail].next = n;
    s.tail = n;
  }
  // The fine ring now starts at cur_: every coarse slot that fits in it whole moves in (its
  // events are due after every event already there), and the heap refills the slots freed.
  void advance() {
    while (((mig_ + 1) << kSlotBits) <= cur_ + kBuckets) {
      List& s = slots_[mig_ & (kSlots - 1)];
      for (uint32_t n = s.head; n != kNil;) {
        const uint32_t next = nodes_[n].next;
        insert(nodes_[n].time >> kShift, n);
        ++near_;
        --coarse_;
        n = next;
      }
      s = List{};
      ++mig_;
      pull();
    }
  }
  // Heap events whose slot is now in the coarse window, in (time, sequence) order: before any
  // direct push to that slot, so its list stays in push order.
  void pull() {
    while (!far_.empty() && (far_.front().time >> kSlotShift) < mig_ + kSlots) {
      std::pop_heap(far_.begin(), far_.end(), Later{});
      const Far& f = far_.back();
      append(f.time >> kSlotShift, alloc(f.time, f.payload));
      ++coarse_;
      far_.pop_back();
    }
  }
  // The fine ring is empty: the earliest event is in the first non-empty coarse slot, or at the
  // top of the heap. Move the ring to it.
  void jump() {
    if (coarse_ == 0) {
      mig_ = far_.front().time >> kSlotShift;
      pull();
    } else {
      while (slots_[mig_ & (kSlots - 1)].head == kNil) ++mig_;
      pull();
    }
    uint64_t t = ~uint64_t{0};
    for (uint32_t n = slots_[mig_ & (kSlots - 1)].head; n != kNil; n = nodes_[n].next)
      t = std::min(t, nodes_[n].time);
    cur_ = peek_ = t >> kShift;
    advance();
  }
  // The earliest event when the fine ring is empty (rare: the queue is nearly empty).
  Ref later() const {
    if (coarse_ == 0) return {far_.front().time, far_.front().payload};
    uint64_t c = mig_;
    while (slots_[c & (kSlots - 1)].head == kNil) ++c;
    const Node* best = nullptr;
    for (uint32_t n = slots_[c & (kSlots - 1)].head; n != kNil; n = nodes_[n].next)
      if (!best || nodes_[n].time < best->time) best = &nodes_[n];  // first of equal times
    return {best->time, best->payload};
  }

  std::vector<Node> nodes_;  // every event in the fine ring and the coarse slots
  uint32_t free_ = kNil;     // free nodes, linked by next
  std::vector<List> fine_ = std::vector<List>(kBuckets);
  std::vector<List> slots_ = std::vector<List>(kSlots);
  uint64_t cur_ = 0;           // bucket of the last event popped (no push is earlier)
  mutable uint64_t peek_ = 0;  // >= cur_; every bucket in [cur_, peek_) is empty (a cache)
  // Slots before mig_ are in the fine ring; slots [mig_, mig_ + kSlots) in slots_.
  uint64_t mig_ = kBuckets >> kSlotBits;
  size_t near_ = 0;       // events in the fine ring
  size_t coarse_ = 0;     // events in the coarse slots
  std::vector<Far> far_;  // events beyond the slots, a min-heap on (time, sequence)
  uint64_t seq_ = 0;
};

}  // namespace dmrt::sim
