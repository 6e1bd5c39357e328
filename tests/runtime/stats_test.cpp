#include "dmrt/runtime/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace dmrt {

TEST(Histogram, ExactForSmallValues) {
  Histogram h;
  for (uint64_t v = 1; v <= 50; ++v) h.record(v);
  EXPECT_EQ(h.count(), 50u);
  EXPECT_EQ(h.percentile(0.5), 25u);
  EXPECT_EQ(h.percentile(1.0), 50u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_DOUBLE_EQ(h.mean(), 25.5);
}

TEST(Histogram, PercentilesWithinThreePercent) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(9.0, 1.5);  // ~8 us median, long tail
  std::vector<uint64_t> values;
  Histogram h;
  for (int i = 0; i < 200000; ++i) {
    uint64_t v = static_cast<uint64_t>(dist(rng)) + 1;
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    uint64_t exact = values[static_cast<size_t>(std::ceil(q * values.size())) - 1];
    uint64_t approx = h.percentile(q);
    EXPECT_NEAR(static_cast<double>(approx), static_cast<double>(exact), exact * 0.031)
        << "q=" << q;
  }
  EXPECT_EQ(h.max(), values.back());
}

TEST(Histogram, MergeEqualsRecordingEverything) {
  Histogram a, b, all;
  for (uint64_t v = 0; v < 100000; v += 7) {
    (v % 2 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  for (double q : {0.1, 0.5, 0.99}) EXPECT_EQ(a.percentile(q), all.percentile(q));
  EXPECT_EQ(a.max(), all.max());
}

TEST(Histogram, HugeValuesDoNotOverflowBuckets) {
  Histogram h;
  h.record(~0ull);
  h.record(uint64_t{1} << 62);
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.max(), ~0ull);
  EXPECT_LT(Histogram::bucket_of(~0ull), Histogram::kBuckets);
}

TEST(Counters, MergeAddsPerNodeAndRole) {
  Counters a, b;
  a.by_node.resize(2);
  b.by_node.resize(3);
  a.total.verbs[0] = 1;
  b.total.verbs[0] = 2;
  b.by_node[2].round_trips = 5;
  b.role(NodeRole::kCompute).bytes_read = 9;
  a += b;
  EXPECT_EQ(a.total.count(VerbKind::kRead), 3u);
  ASSERT_EQ(a.by_node.size(), 3u);
  EXPECT_EQ(a.by_node[2].round_trips, 5u);
  EXPECT_EQ(a.role(NodeRole::kCompute).bytes_read, 9u);
}

}  // namespace dmrt
