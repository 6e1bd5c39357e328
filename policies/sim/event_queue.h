// sim::EventQueue: the simulator's pending events, earliest first, ties in push order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dmrt::sim {

// A calendar queue. Events are pushed and popped twice per simulated verb, and nearly every one
// is due within a few microseconds of the current time (a wire latency, a NIC queue), so the near
// future is cut into kBuckets buckets of 2^kShift ps each, in a ring; an event is appended to its
// bucket (kept sorted, which is almost always an append) and popped from the earliest non-empty
// one, where a binary heap of ~1,000 events pays ten levels of mispredicted comparisons per pop.
// Events further ahead than the ring wait in a heap and move into their bucket as the ring
// reaches them. The order is exactly (time, push order), as a heap on (time, sequence) gives, so
// a run is the same event for event. Storage grows to the peak number of pending events and is
// then reused: no allocation per event in a steady state.
template <class T, unsigned kShiftBits = 11, uint64_t kRingBuckets = 4096>
class EventQueue {
 public:
  // 2.048 ns per bucket and a ring of 8.4 us by default: about one event per bucket in the
  // densest runs measured (RACE, 10 x 32 clients, ~160 events per virtual us), and every wire
  // latency within the ring. A saturated NIC's queue can be longer (those events take the heap);
  // a ring of 134 us was slower all the same (docs/sim.md, "Speed").
  static constexpr unsigned kShift = kShiftBits;
  static constexpr uint64_t kBuckets = kRingBuckets;

  bool empty() const { return near_ + far_.size() == 0; }
  size_t size() const { return near_ + far_.size(); }

  // The earliest event; only when !empty().
  uint64_t top_time() const { return near_ ? front(find()).time : far_.front().time; }
  const T& top() const { return near_ ? front(find()).payload : far_.front().payload; }

  // `time` is never earlier than the last event popped (the simulator's clock only advances).
  void push(uint64_t time, const T& payload) {
    const Entry e{time, seq_++, payload};
    const uint64_t b = time >> kShift;
    if (b < cur_ + kBuckets) {
      insert(b, e);
      if (b < peek_) peek_ = b;
    } else {
      far_.push_back(e);
      std::push_heap(far_.begin(), far_.end(), Later{});
    }
  }

  // Removes the earliest event (only when !empty()): returns its time, its payload in `out`.
  uint64_t pop(T& out) {
    if (near_ == 0) {  // everything pending is beyond the ring: move the ring to it
      cur_ = peek_ = far_.front().time >> kShift;
      migrate();
    }
    const uint64_t b = find();
    if (b != cur_) {
      cur_ = b;
      migrate();
    }
    Bucket& bk = buckets_[b % kBuckets];
    const Entry& e = bk.items[bk.head++];
    out = e.payload;
    const uint64_t time = e.time;
    if (bk.head == bk.items.size()) {
      bk.items.clear();
      bk.head = 0;
    }
    --near_;
    return time;
  }

 private:
  struct Entry {
    uint64_t time;
    uint64_t seq;
    T payload;
  };
  static bool earlier(const Entry& a, const Entry& b) {
    return a.time != b.time ? a.time < b.time : a.seq < b.seq;
  }
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const { return earlier(b, a); }
  };
  struct Bucket {
    std::vector<Entry> items;  // [head, size) pending, sorted
    size_t head = 0;
  };

  const Entry& front(uint64_t b) const {
    const Bucket& bk = buckets_[b % kBuckets];
    return bk.items[bk.head];
  }
  // The earliest non-empty bucket (only when near_ > 0): buckets in [cur_, peek_) are empty.
  uint64_t find() const {
    while (buckets_[peek_ % kBuckets].head == buckets_[peek_ % kBuckets].items.size()) ++peek_;
    return peek_;
  }
  void insert(uint64_t b, const Entry& e) {
    Bucket& bk = buckets_[b % kBuckets];
    bk.items.push_back(e);
    // Later pushes carry later sequence numbers, so this moves an event only when its time is
    // earlier than the bucket's last.
    for (size_t i = bk.items.size() - 1; i > bk.head && earlier(e, bk.items[i - 1]); --i)
      std::swap(bk.items[i], bk.items[i - 1]);
    ++near_;
  }
  // The ring now starts at cur_: events of the heap that fall in it go to their buckets. They are
  // all later than any event already in the ring (they were beyond it when pushed).
  void migrate() {
    while (!far_.empty() && (far_.front().time >> kShift) < cur_ + kBuckets) {
      std::pop_heap(far_.begin(), far_.end(), Later{});
      insert(far_.back().time >> kShift, far_.back());
      far_.pop_back();
    }
  }

  std::vector<Bucket> buckets_ = std::vector<Bucket>(kBuckets);
  uint64_t cur_ = 0;           // bucket of the last event popped (no push is earlier)
  mutable uint64_t peek_ = 0;  // >= cur_; every bucket in [cur_, peek_) is empty (a cache)
  size_t near_ = 0;            // events in the ring
  std::vector<Entry> far_;     // events beyond the ring, a min-heap on (time, sequence)
  uint64_t seq_ = 0;
};

}  // namespace dmrt::sim
