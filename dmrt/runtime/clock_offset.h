// How one process's steady clock relates to a reference node's, with a stated error bound
// (design.md principle 7: no shared clock assumed without a stated bound). A compute process of a
// multi-host run measures it against the first memory node (verbs::Cluster::clock_offset), moves
// its history's timestamps onto the reference clock, and records the bound, which the checker
// then honours (docs/correctness.md, "Histories across hosts").
//
// Clocks: every time here is std::chrono::steady_clock in ns since its epoch (Endpoint::now_ns()),
// the local one or the reference node's.
//
// Drift assumption: the two hosts' steady clocks run at rates that differ by at most
// kMaxDriftPpm (200 ppm: crystals are specified within +-100 ppm, and the frequency correction
// NTP or chrony applies to CLOCK_MONOTONIC in steady state is of that order). Over a local
// interval of T ns the offset then moves by at most T * 200e-6 ns. It does not hold while a time
// daemon slews away a large error (chrony may slew at up to 83,333 ppm): clock_offset_over() also
// covers a drift that is constant over the phase at any rate, and measuring at every barrier keeps
// phases short.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>

namespace dmrt {

// How this process's steady clock relates to a reference node's: ref = local + offset_ns, within
// +-bound_ns.
struct ClockOffset {
  int64_t offset_ns = 0;
  uint64_t bound_ns = 0;
};

inline constexpr uint64_t kMaxDriftPpm = 200;

// One request/answer exchange with the reference node (Cristian's method): sent at local
// `sent_ns`, answered with the reference clock's `ref_ns`, the answer received at local
// `received_ns`; `resolution_ns` is the granularity of the clock reads (the server's plus ours).
struct ClockSample {
  uint64_t sent_ns = 0;
  uint64_t ref_ns = 0;
  uint64_t received_ns = 0;
  uint64_t resolution_ns = 0;
};

namespace clock_detail {
inline uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}
// The most the offset moves over `interval_ns` (rounded up): 200 ppm = 1/5000.
inline uint64_t drift_ns(uint64_t interval_ns) {
  static_assert(1'000'000 % kMaxDriftPpm == 0);
  constexpr uint64_t kPer = 1'000'000 / kMaxDriftPpm;
  return interval_ns / kPer + (interval_ns % kPer ? 1 : 0);
}
}  // namespace clock_detail

// The offset one sample shows, valid at the local midpoint m = sent + (received - sent) / 2.
// The reference clock was read at some local instant s in [sent, received], so
// ref_ns = s + offset(s), and |ref_ns - m - offset(m)| <= |s - m| + drift over |s - m|
// <= ceil(rtt / 2) + drift(rtt / 2), plus the reads' resolution. A sample received before it was
// sent (impossible on a steady clock) gives the largest bound: it can never be chosen.
inline ClockOffset clock_offset_of(const ClockSample& s) {
  using namespace clock_detail;
  if (s.received_ns < s.sent_ns) return {0, std::numeric_limits<uint64_t>::max()};
  const uint64_t rtt = s.received_ns - s.sent_ns;
  const uint64_t mid = s.sent_ns + rtt / 2;
  const uint64_t half = rtt / 2 + rtt % 2;
  ClockOffset c;
  c.offset_ns = static_cast<int64_t>(s.ref_ns - mid);  // two's complement: the signed difference
  c.bound_ns = sat_add(sat_add(half, drift_ns(half)), s.resolution_ns);
  return c;
}

// The best of several samples: the smallest bound (the shortest round trip). Every sample's
// interval contains the true offset, so any one is sound; the tightest is kept. No samples: an
// unbounded answer.
inline ClockOffset best_clock_offset(std::span<const ClockSample> samples) {
  ClockOffset best{0, std::numeric_limits<uint64_t>::max()};
  for (const ClockSample& s : samples) {
    ClockOffset c = clock_offset_of(s);
    if (c.bound_ns < best.bound_ns) best = c;
  }
  return best;
}

// A measurement used `elapsed_ns` (local) after it was taken, or before: the bound grows by the
// drift over that time. For a phase with only one measurement.
inline ClockOffset clock_offset_aged(ClockOffset c, uint64_t elapsed_ns) {
  c.bound_ns = clock_detail::sat_add(c.bound_ns, clock_detail::drift_ns(elapsed_ns));
  return c;
}

// One offset valid over a whole phase, from measurements at its start (`a`, taken around local
// `a_local_ns`) and at its end (`b`, around `b_local_ns`). For soundness pass, for a_local_ns, a
// local time read BEFORE the start measurement began and, for b_local_ns, one read AFTER the end
// measurement returned, so that both sample instants lie in [a_local_ns, b_local_ns], an interval
// of T ns. The phase's operations must lie between the two measurements (invoked after the start
// one returned, answered before the end one began).
//
// The offset is the midpoint of the two, (a + b) / 2, one constant for the whole phase: the
// conversion is then a plain shift, which keeps the order of the phase's own timestamps exactly
// (interpolating would bend them, and gains nothing in the worst case: the interpolation's error
// midway is the same as this one's). Its error at any t of the interval:
//   - if the rates differ by at most 200 ppm:
//       |offset(t) - (a + b)/2| <= (|offset(t) - a| + |offset(t) - b|) / 2
//                              <= (a.bound + drift(t - a_t) + b.bound + drift(b_t - t)) / 2
//                              =  (a.bound + b.bound) / 2 + drift(T) / 2;
//   - if the drift is constant over the interval, whatever its rate: offset(t) lies between the
//     true offsets at the two ends, each within its bound of a or b, so the error is at most
//     max(a.bound, b.bound) + |b - a| / 2.
// The bound returned is the larger of the two (plus 1 ns of rounding), so it holds under either
// assumption: a large |b - a| (rates far apart, e.g. a clock slewed hard by NTP) widens it rather
// than being ignored. Under the 200 ppm assumption |b - a| <= a.bound + b.bound + drift(T), so the
// bound is at most 2 max(a.bound, b.bound) + drift(T) / 2.
inline ClockOffset clock_offset_over(ClockOffset a, uint64_t a_local_ns, ClockOffset b,
                                     uint64_t b_local_ns) {
  using namespace clock_detail;
  if (b_local_ns < a_local_ns) {
    std::swap(a, b);
    std::swap(a_local_ns, b_local_ns);
  }
  const uint64_t t = b_local_ns - a_local_ns;
  // The difference of two int64 as uint64 (exact: offsets are far from the int64 limits).
  const uint64_t diff =
      a.offset_ns <= b.offset_ns
          ? static_cast<uint64_t>(b.offset_ns) - static_cast<uint64_t>(a.offset_ns)
          : static_cast<uint64_t>(a.offset_ns) - static_cast<uint64_t>(b.offset_ns);
  ClockOffset c;
  c.offset_ns = a.offset_ns <= b.offset_ns ? a.offset_ns + static_cast<int64_t>(diff / 2)
                                           : a.offset_ns - static_cast<int64_t>(diff / 2);
  const uint64_t sum = sat_add(a.bound_ns, b.bound_ns);
  const uint64_t rate_bound = sat_add(sum / 2 + sum % 2, drift_ns(t) / 2 + drift_ns(t) % 2);
  const uint64_t linear_bound = sat_add(std::max(a.bound_ns, b.bound_ns), diff / 2 + diff % 2);
  c.bound_ns = sat_add(std::max(rate_bound, linear_bound), 1);
  return c;
}

// A local steady-clock time on the reference clock (saturating at 0 and at the top).
inline uint64_t to_reference_ns(uint64_t local_ns, ClockOffset c) {
  if (c.offset_ns >= 0) return clock_detail::sat_add(local_ns, static_cast<uint64_t>(c.offset_ns));
  const uint64_t back = 0 - static_cast<uint64_t>(c.offset_ns);
  return local_ns > back ? local_ns - back : 0;
}

}  // namespace dmrt
