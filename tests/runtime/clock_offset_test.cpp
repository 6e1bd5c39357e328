// dmrt/runtime/clock_offset.h: Cristian's samples, the best of several, and one offset over a
// phase, each checked against simulated clocks whose true offset is known.
#include "dmrt/runtime/clock_offset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace dmrt {
namespace {

// |true_offset - c.offset_ns| <= c.bound_ns, in exact integer arithmetic where it matters.
bool covers(ClockOffset c, double true_offset) {
  return std::fabs(true_offset - static_cast<double>(c.offset_ns)) <=
         static_cast<double>(c.bound_ns);
}

TEST(ClockOffset, OneSampleIsCristiansEstimate) {
  // Sent at 1000, received at 1100: the reference read 5000 is taken for local 1050.
  ClockOffset c = clock_offset_of({1000, 5000, 1100, 1});
  EXPECT_EQ(c.offset_ns, 3950);
  EXPECT_EQ(c.bound_ns, 50u + 1u + 1u);  // half the round trip, drift over it (rounded up), res.
  // A reference clock behind ours: a negative offset.
  c = clock_offset_of({1'000'000, 400, 1'000'020, 0});
  EXPECT_EQ(c.offset_ns, 400 - 1'000'010);
  EXPECT_EQ(c.bound_ns, 10u + 1u);
  // An odd round trip rounds the bound up.
  EXPECT_EQ(clock_offset_of({0, 0, 7, 0}).bound_ns, 4u + 1u);
  // A sample received before it was sent is never believed.
  EXPECT_EQ(clock_offset_of({10, 0, 5, 0}).bound_ns, UINT64_MAX);
}

TEST(ClockOffset, BestSampleHasTheShortestRoundTrip) {
  std::vector<ClockSample> s = {
      {0, 1000, 400, 0}, {1000, 2000, 1060, 0}, {2000, 3000, 2300, 0}, {3000, 4100, 3200, 0}};
  ClockOffset c = best_clock_offset(s);
  EXPECT_EQ(c.offset_ns, 2000 - 1030);
  EXPECT_EQ(c.bound_ns, 30u + 1u);
  EXPECT_EQ(best_clock_offset({}).bound_ns, UINT64_MAX);
}

TEST(ClockOffset, AgedMeasurementGrowsByTheDriftRate) {
  ClockOffset c{-7, 100};
  ClockOffset aged = clock_offset_aged(c, 1'000'000'000);  // 1 s at 200 ppm: 200 us
  EXPECT_EQ(aged.offset_ns, -7);
  EXPECT_EQ(aged.bound_ns, 100u + 200'000u);
  EXPECT_EQ(clock_offset_aged({0, UINT64_MAX - 1}, 1'000'000).bound_ns, UINT64_MAX);
}

TEST(ClockOffset, OverAPhaseTakesTheMidpointAndHoldsUnderEitherAssumption) {
  // Two exact measurements 10 s apart that agree: only the drift is unknown (2 ms over 10 s,
  // half of it from the midpoint).
  ClockOffset c = clock_offset_over({500, 0}, 0, {500, 0}, 10'000'000'000);
  EXPECT_EQ(c.offset_ns, 500);
  EXPECT_EQ(c.bound_ns, 1'000'000u + 1u);
  // Measurements that differ by more than the rate allows: the constant-drift bound takes over.
  c = clock_offset_over({0, 10}, 0, {-100'000, 20}, 1'000'000);
  EXPECT_EQ(c.offset_ns, -50'000);
  EXPECT_EQ(c.bound_ns, 20u + 50'000u + 1u);
  // Order of the arguments does not matter.
  ClockOffset d = clock_offset_over({-100'000, 20}, 1'000'000, {0, 10}, 0);
  EXPECT_EQ(d.offset_ns, c.offset_ns);
  EXPECT_EQ(d.bound_ns, c.bound_ns);
}

TEST(ClockOffset, ReferenceTimeSaturates) {
  EXPECT_EQ(to_reference_ns(1000, {-400, 0}), 600u);
  EXPECT_EQ(to_reference_ns(1000, {-4000, 0}), 0u);
  EXPECT_EQ(to_reference_ns(1000, {25, 0}), 1025u);
  EXPECT_EQ(to_reference_ns(UINT64_MAX - 1, {25, 0}), UINT64_MAX);
}

// A simulated reference clock: offset(t) = base + a piecewise-linear drift whose rate stays
// within `max_ppm` (changing at random points), so measurements can be checked against the
// truth.
struct SimClock {
  double base;
  std::vector<double> knots_t, knots_off;  // offset at each knot; linear in between
  double offset(double t) const {
    size_t i = 1;
    while (i + 1 < knots_t.size() && knots_t[i] < t) ++i;
    double f = (t - knots_t[i - 1]) / (knots_t[i] - knots_t[i - 1]);
    return base + knots_off[i - 1] + f * (knots_off[i] - knots_off[i - 1]);
  }
};

SimClock random_clock(std::mt19937_64& rng, double horizon, double max_ppm, int pieces) {
  std::uniform_real_distribution<double> rate(-max_ppm * 1e-6, max_ppm * 1e-6);
  SimClock c;
  c.base = std::uniform_real_distribution<double>(-5e8, 1e12)(rng);  // ref >= 0 from t = 1 s
  c.knots_t.push_back(0);
  c.knots_off.push_back(0);
  for (int i = 1; i <= pieces; ++i) {
    double t = horizon * i / pieces;
    c.knots_off.push_back(c.knots_off.back() + rate(rng) * (t - c.knots_t.back()));
    c.knots_t.push_back(t);
  }
  return c;
}

// Samples of the simulated clock: the server reads at a random instant of each round trip.
ClockOffset measure(std::mt19937_64& rng, const SimClock& clk, double at, int samples,
                    double* first_sent, double* last_received) {
  std::vector<ClockSample> s;
  std::uniform_real_distribution<double> rtt(2'000, 400'000), where(0, 1);
  double t = at;
  *first_sent = t;
  for (int i = 0; i < samples; ++i) {
    double r = rtt(rng);
    double read_at = t + where(rng) * r;
    uint64_t ref = static_cast<uint64_t>(std::floor(read_at + clk.offset(read_at)));
    // Local reads truncated to ns; the reference read truncated too: 1 ns of resolution each.
    s.push_back(
        {static_cast<uint64_t>(std::floor(t)), ref, static_cast<uint64_t>(std::ceil(t + r)), 2});
    t += r + 1000;
  }
  *last_received = t;
  return best_clock_offset(s);
}

TEST(ClockOffset, RandomClocksWithin200PpmAreAlwaysCovered) {
  std::mt19937_64 rng(35);
  const double horizon = 60e9;  // a minute
  for (int trial = 0; trial < 2000; ++trial) {
    SimClock clk = random_clock(rng, horizon, 200, 1 + trial % 7);
    std::uniform_real_distribution<double> when(1e9, horizon / 2);
    double start_at = when(rng), end_at = start_at + when(rng);
    double a0, a1, b0, b1;
    ClockOffset a = measure(rng, clk, start_at, 1 + trial % 16, &a0, &a1);
    ClockOffset b = measure(rng, clk, end_at, 1 + trial % 16, &b0, &b1);
    ClockOffset phase =
        clock_offset_over(a, static_cast<uint64_t>(a0), b, static_cast<uint64_t>(std::ceil(b1)));
    for (int k = 0; k <= 20; ++k) {
      double t = a1 + (b0 - a1) * k / 20;
      ASSERT_TRUE(covers(phase, clk.offset(t)))
          << "trial " << trial << " t " << t << ": true " << clk.offset(t) << ", measured "
          << phase.offset_ns << " +- " << phase.bound_ns;
      // Timestamps moved with it are within the bound of the reference clock's reading.
      double ref = t + clk.offset(t);
      uint64_t conv = to_reference_ns(static_cast<uint64_t>(t), phase);
      ASSERT_LE(std::fabs(static_cast<double>(conv) - ref), phase.bound_ns + 1.0);
    }
    // The bound is what the doc promises: at most twice the worse measurement plus half the
    // drift over the phase.
    double drift = (b1 - a0) * 200e-6;
    EXPECT_LE(phase.bound_ns, 2 * std::max(a.bound_ns, b.bound_ns) + drift / 2 + 3);
  }
}

TEST(ClockOffset, AConstantDriftBeyond200PpmIsStillCovered) {
  std::mt19937_64 rng(36);
  for (int trial = 0; trial < 500; ++trial) {
    SimClock clk = random_clock(rng, 60e9, 20'000, 1);  // one straight piece, up to 2%
    double a0, a1, b0, b1;
    ClockOffset a = measure(rng, clk, 2e9, 8, &a0, &a1);
    ClockOffset b = measure(rng, clk, 40e9, 8, &b0, &b1);
    ClockOffset phase =
        clock_offset_over(a, static_cast<uint64_t>(a0), b, static_cast<uint64_t>(std::ceil(b1)));
    for (int k = 0; k <= 10; ++k) {
      double t = a1 + (b0 - a1) * k / 10;
      ASSERT_TRUE(covers(phase, clk.offset(t))) << "trial " << trial;
    }
  }
}

}  // namespace
}  // namespace dmrt
