#include "dmrt/runtime/stats.h"

#include <algorithm>
#include <cmath>

namespace dmrt {

VerbCounters& VerbCounters::operator+=(const VerbCounters& o) {
  for (size_t i = 0; i < verbs.size(); ++i) verbs[i] += o.verbs[i];
  emulated_masked_cas += o.emulated_masked_cas;
  emulation_retries += o.emulation_retries;
  atomic_releases += o.atomic_releases;
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  round_trips += o.round_trips;
  local_accesses += o.local_accesses;
  messages += o.messages;
  message_bytes += o.message_bytes;
  return *this;
}

VerbCounters& VerbCounters::operator-=(const VerbCounters& o) {
  for (size_t i = 0; i < verbs.size(); ++i) verbs[i] -= o.verbs[i];
  emulated_masked_cas -= o.emulated_masked_cas;
  emulation_retries -= o.emulation_retries;
  atomic_releases -= o.atomic_releases;
  bytes_read -= o.bytes_read;
  bytes_written -= o.bytes_written;
  round_trips -= o.round_trips;
  local_accesses -= o.local_accesses;
  messages -= o.messages;
  message_bytes -= o.message_bytes;
  return *this;
}

Counters& Counters::operator+=(const Counters& o) {
  total += o.total;
  for (size_t i = 0; i < by_role.size(); ++i) by_role[i] += o.by_role[i];
  if (by_node.size() < o.by_node.size()) by_node.resize(o.by_node.size());
  for (size_t i = 0; i < o.by_node.size(); ++i) by_node[i] += o.by_node[i];
  return *this;
}

void Histogram::merge(const Histogram& o) {
  for (size_t i = 0; i < kBuckets; ++i) buckets_[i] += o.buckets_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  max_ = std::max(max_, o.max_);
  min_ = std::min(min_, o.min_);
}

uint64_t Histogram::bucket_value(size_t b) {
  if (b < 2 * kSub) return b;
  uint64_t e = b / kSub - 1;
  uint64_t mantissa = kSub + b % kSub;
  uint64_t lo = mantissa << e;
  return lo + ((uint64_t{1} << e) >> 1);
}

uint64_t Histogram::percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Rank of the q-quantile among count_ samples (1-based, nearest-rank definition).
  uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * count_)));
  uint64_t seen = 0;
  for (size_t b = 0; b < kBuckets; ++b) {
    seen += buckets_[b];
    if (seen >= rank) return std::clamp(bucket_value(b), min_, max_);
  }
  return max_;
}

}  // namespace dmrt
