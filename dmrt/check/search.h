// The per-key search of the checker, with the limits a whole check shares (internal to dmrt/check/;
// the public entry points are in dmrt/check/linearizability.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>

#include "dmrt/check/linearizability.h"
#include "dmrt/check/memo.h"
#include "dmrt/check/search_poll.h"

namespace dmrt::check_detail {

// When a search must give up (all optional): a deadline, a cancel flag another thread raises once
// the history is decided, and the memory budget of the whole check.
struct SearchLimits {
  Clock::time_point deadline = Clock::time_point::max();
  const std::atomic<bool>* cancel = nullptr;
  MemoryBudget* memory = nullptr;
};

// Point operations of ONE key from `initial` (check_key with limits).
Verdict search_key(std::span<const Operation> ops, KeyState initial, uint64_t max_steps,
                   uint64_t* steps, const SearchLimits& limits, StopReason* why = nullptr);

// From any initial state (check_key_any_state with limits).
Verdict search_key_any_state(std::span<const Operation> ops, uint64_t max_steps, uint64_t* steps,
                             const SearchLimits& limits, StopReason* why = nullptr);

}  // namespace dmrt::check_detail
