// The scan checks of the checker: each scan against the guarantee range indexes give (see
// docs/correctness.md), from per-key tables of the point operations (internal to dmrt/check/).
#pragma once

#include <chrono>
#include <span>
#include <vector>

#include "dmrt/check/linearizability.h"

namespace dmrt::check_detail {

// A key's point operations: [begin, end) of an array sorted by key.
struct KeyRange {
  Key key;
  size_t begin, end;
};

// Checks the completed scans (any order) against the point operations `ops`, grouped by `keys`.
// On a violation, sets res.failing_scan, scan_problem, smallest_failing_history and details, and
// stops; counts res.scans_checked; past the deadline sets res.unknown and its reason.
void check_scans(const History& history, std::span<const Operation> ops,
                 std::span<const KeyRange> keys, std::vector<Operation> scans,
                 std::chrono::steady_clock::time_point deadline, size_t max_rendered_ops,
                 CheckResult& res);

}  // namespace dmrt::check_detail
