// Shrinking a violation: shortest failing prefix of quiescent segments, latest failing start,
// then delta debugging over single operations.
#include "dmrt/check/shrink.h"

#include <algorithm>
#include <chrono>

namespace dmrt::check_detail {

std::vector<Operation> shrink_key(std::vector<Operation> ops, const CheckOptions& opt,
                                  const SearchLimits& limits, bool& from_any_state) {
  // Past the deadline the witness is what has been shrunk so far (the verdict is already
  // decided); every probe below is a search that reads the same deadline on its work.
  Poll poll(limits.deadline, nullptr);
  if (!sort_polled(
          std::span<Operation>(ops),
          [](const Operation& a, const Operation& b) {
            return a.invoke_ns != b.invoke_ns ? a.invoke_ns < b.invoke_ns
                                              : a.response_ns < b.response_ns;
          },
          poll))
    return ops;
  // Quiescent segments: seg[k] = index where segment k starts; no op is open across a boundary.
  std::vector<size_t> seg{0};
  uint64_t open_until = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i > 0 && open_until < ops[i].invoke_ns) seg.push_back(i);
    open_until = std::max(open_until, ops[i].response_ns);
  }
  seg.push_back(ops.size());
  size_t nseg = seg.size() - 1;
  auto window = [&](size_t i, size_t j) {  // segments [i, j)
    return std::vector<Operation>(ops.begin() + seg[i], ops.begin() + seg[j]);
  };
  uint64_t budget = opt.shrink_steps;
  auto fails_empty = [&](const std::vector<Operation>& w) {
    return search_key(w, {}, budget, nullptr, limits) == Verdict::kViolation;
  };
  auto fails_any = [&](const std::vector<Operation>& w) {
    return search_key_any_state(w, budget, nullptr, limits) == Verdict::kViolation;
  };
  // Shortest failing prefix of segments (monotone: a longer prefix of a failing one fails).
  size_t lo = 1, hi = nseg;
  while (lo < hi && !poll.check()) {
    size_t mid = (lo + hi) / 2;
    if (fails_empty(window(0, mid)))
      hi = mid;
    else
      lo = mid + 1;
  }
  size_t j = hi;
  std::vector<Operation> best = window(0, j);
  // Latest start segment from which the window fails from ANY state (monotone in the start):
  // galloping back from the end keeps the probed windows about twice the answer's size.
  from_any_state = false;
  constexpr size_t kMaxAnyStateWindow = 4000;
  size_t good = j, step = 1;  // window(good, j) fails from any state; j = none found yet
  size_t bad = j;             // window(bad, j) does not (or not tried)
  while (!poll.check()) {
    size_t i = step > j ? 0 : j - step;
    if (seg[j] - seg[i] > kMaxAnyStateWindow) break;
    if (fails_any(window(i, j))) {
      good = i;
      break;
    }
    bad = i;
    if (i == 0) break;
    step *= 2;
  }
  if (good < j) {
    size_t a = good, b = bad;  // fails at a, not at b (a < b)
    while (b - a > 1 && !poll.check()) {
      size_t mid = (a + b) / 2;
      if (fails_any(window(mid, j)))
        a = mid;
      else
        b = mid;
    }
    best = window(a, j);
    from_any_state = true;
  }
  // Drop operations while the rest still fails the same way: chunks of half the history first,
  // then ever smaller ones down to single operations (delta debugging), so a long window left by
  // one very long operation shrinks in about log(n) passes instead of n single drops.
  // Keep the writes of values the remaining operations read: a witness names its sources.
  // (Sorted value sets: O(n log n), where a scan of both lists per read was O(n^2), minutes
  // for a window of a hundred thousand operations, none of it interruptible.)
  auto written = [](const std::vector<Operation>& v) {
    std::vector<uint64_t> w;
    for (const Operation& o : v)
      if (o.kind == OpKind::kInsert || o.kind == OpKind::kUpdate || o.kind == OpKind::kRmw)
        w.push_back(o.arg);
    std::sort(w.begin(), w.end());
    return w;
  };
  auto keeps_sources = [&](const std::vector<Operation>& t, const std::vector<Operation>& from) {
    std::vector<uint64_t> had = written(from), has = written(t);
    for (const Operation& r : t) {
      if (!r.ok || r.pending() || (r.kind != OpKind::kSearch && r.kind != OpKind::kRmw)) continue;
      if (std::binary_search(had.begin(), had.end(), r.out) &&
          !std::binary_search(has.begin(), has.end(), r.out))
        return false;
    }
    return true;
  };
  auto deadline = std::min(limits.deadline, Clock::now() + std::chrono::seconds(10));
  for (size_t chunk = std::max<size_t>(best.size() / 2, 1); chunk >= 1; chunk /= 2) {
    for (size_t i = 0; i < best.size() && Clock::now() < deadline;) {
      std::vector<Operation> t = best;
      t.erase(t.begin() + i, t.begin() + std::min(i + chunk, t.size()));
      if (!t.empty() && keeps_sources(t, best) && (from_any_state ? fails_any(t) : fails_empty(t)))
        best = std::move(t);
      else
        i += chunk;
    }
    if (chunk == 1) break;
  }
  return best;
}

}  // namespace dmrt::check_detail
