// Liveness beside linearizability. check_history() accepts a pending operation (no response: its
// effect may or may not have happened), as it must for a client that crashed. A run in which no
// client was meant to stop early, and which still ends with an operation invoked long before its
// end and never answered, is not complete: that operation hung (tests/coherence: a client that
// spins on a line never written back, stopped by sim's watchdog).
#pragma once

#include <cstdint>
#include <vector>

#include "dmrt/check/history.h"

namespace dmrt {

// The operations of `h` still pending at `end_ns` (the history's end: when its last client
// stopped) that were invoked at least `within_ns` before it.
inline std::vector<Operation> unanswered(const History& h, uint64_t end_ns, uint64_t within_ns) {
  std::vector<Operation> out;
  for (const Operation& o : h.ops)
    if (o.pending() && o.invoke_ns <= end_ns && end_ns - o.invoke_ns >= within_ns) out.push_back(o);
  return out;
}

}  // namespace dmrt
