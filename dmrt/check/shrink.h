// Shrinking: a small failing sub-history of one key's non-linearizable operations, for reports
// (internal to dmrt/check/).
#pragma once

#include <vector>

#include "dmrt/check/search.h"

namespace dmrt::check_detail {

// A small sub-history of `ops` (one key, not linearizable) that still fails: from ANY initial
// state when one can be found (from_any_state = true), else from the empty one. Each check made
// while shrinking gets opt.shrink_steps; the drop phase stops after 10 s or at the deadline.
std::vector<Operation> shrink_key(std::vector<Operation> ops, const CheckOptions& opt,
                                  const SearchLimits& limits, bool& from_any_state);

}  // namespace dmrt::check_detail
