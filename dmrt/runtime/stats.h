// Per-client verb/byte/round-trip counters split by node and role, and latency histograms.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "dmrt/runtime/verbs.h"

namespace dmrt {

enum class NodeRole : uint8_t { kMemory = 0, kCompute = 1 };

// What one client sent to one node (or role, or everyone). Plain integers: each client owns its
// counters, so no atomics; they are merged after the fibers have joined.
struct VerbCounters {
  std::array<uint64_t, kVerbKinds> verbs{};
  uint64_t emulated_masked_cas = 0;  // masked CAS served by a CAS loop (no native support)
  uint64_t emulation_retries = 0;    // extra CAS attempts those loops took
  uint64_t atomic_releases = 0;      // lock releases whose word was stored by a CAS loop
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t round_trips = 0;
  uint64_t local_accesses = 0;  // batches served from the client's own node (local_access())
  uint64_t messages = 0;        // two-sided messages sent
  uint64_t message_bytes = 0;

  uint64_t total_verbs() const {
    uint64_t n = 0;
    for (auto v : verbs) n += v;
    return n;
  }
  uint64_t count(VerbKind k) const { return verbs[static_cast<size_t>(k)]; }
  VerbCounters& operator+=(const VerbCounters& o);
  VerbCounters& operator-=(const VerbCounters& o);
  friend VerbCounters operator-(VerbCounters a, const VerbCounters& b) { return a -= b; }
  friend VerbCounters operator+(VerbCounters a, const VerbCounters& b) { return a += b; }
};

// A client's whole traffic picture.
struct Counters {
  VerbCounters total;
  std::array<VerbCounters, 2> by_role;  // indexed by NodeRole
  std::vector<VerbCounters> by_node;    // indexed by NodeId

  VerbCounters& role(NodeRole r) { return by_role[static_cast<size_t>(r)]; }
  const VerbCounters& role(NodeRole r) const { return by_role[static_cast<size_t>(r)]; }
  Counters& operator+=(const Counters& o);
};

// How far one client has got, readable from another thread (a stall watchdog): round trips
// posted and waits (pauses, including those for a full mailbox or an answer) so far. Written
// only by the client's own fiber, with relaxed stores, so reading costs it nothing. A client
// blocked inside one round trip moves neither; one retrying a lock that is never released moves
// both.
struct ClientProgress {
  std::atomic<uint64_t> round_trips{0};
  std::atomic<uint64_t> pauses{0};

  void set_round_trips(uint64_t n) { round_trips.store(n, std::memory_order_relaxed); }
  void count_pause() {
    pauses.store(pauses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

// Log-linear latency histogram (values in nanoseconds): exact below 64, then 32 sub-buckets per
// power of two, so any percentile is within ~3% of the true value. Fixed size, no allocation
// after construction, mergeable.
class Histogram {
 public:
  static constexpr unsigned kSubBits = 5;
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  static constexpr size_t kBuckets = 2 * kSub + (64 - kSubBits - 1) * kSub;

  void record(uint64_t v) {
    ++buckets_[bucket_of(v)];
    ++count_;
    sum_ += v;
    if (v > max_) max_ = v;
    if (v < min_) min_ = v;
  }
  void merge(const Histogram& o);
  void clear() { *this = Histogram(); }

  uint64_t count() const { return count_; }
  uint64_t max() const { return count_ ? max_ : 0; }
  uint64_t min() const { return count_ ? min_ : 0; }
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }
  // Value at quantile q in [0,1] (0.5 = median, 0.999 = p999); 0 when empty.
  uint64_t percentile(double q) const;

  static size_t bucket_of(uint64_t v) {
    if (v < 2 * kSub) return v;
    unsigned e = 63 - std::countl_zero(v) - kSubBits;  // shift that keeps kSubBits+1 top bits
    return (e + 1) * kSub + ((v >> e) - kSub);
  }
  // Representative (midpoint) value of a bucket.
  static uint64_t bucket_value(size_t b);

  // The non-empty buckets as (bucket, count), and a histogram rebuilt from them and its sum, min
  // and max: how a histogram travels in a report, so that reports can be added up exactly
  // (dmrt-bench --merge). Throws std::out_of_range for a bucket past kBuckets.
  std::vector<std::pair<uint32_t, uint64_t>> nonzero_buckets() const {
    std::vector<std::pair<uint32_t, uint64_t>> out;
    for (size_t i = 0; i < kBuckets; ++i)
      if (buckets_[i]) out.emplace_back(static_cast<uint32_t>(i), buckets_[i]);
    return out;
  }
  uint64_t sum() const { return sum_; }
  static Histogram from_buckets(const std::vector<std::pair<uint32_t, uint64_t>>& buckets,
                                uint64_t sum, uint64_t min, uint64_t max) {
    Histogram h;
    for (auto [b, n] : buckets) {
      h.buckets_.at(b) += n;
      h.count_ += n;
    }
    h.sum_ = sum;
    if (h.count_) {
      h.min_ = min;
      h.max_ = max;
    }
    return h;
  }

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
  uint64_t min_ = ~0ull;
};

}  // namespace dmrt
