// What the programs that run the checker (dmrt-bench --verify, dmrt-check) share: the default
// budget of a check and the verdict lines they print.
#pragma once

#include <cstdint>
#include <string>

#include "dmrt/check/linearizability.h"

namespace dmrt {

// A check run by a program is bounded by default: after `seconds` or once its searches would
// hold more than `memory_mb`, the verdict is unknown and says which (flags change both).
struct CheckBudget {
  double seconds = 300;
  uint64_t memory_mb = 4096;
  void apply(CheckOptions& o) const {
    o.deadline_seconds = seconds;
    o.memory_budget_bytes = memory_mb << 20;
  }
};

// Prints "linearizable: yes|no|unknown", the counts, and (unless yes) the explanation to stdout.
// Returns the exit code: 0 linearizable, 1 a violation, 2 undecided.
int report_check(const CheckResult& result);

// A budget or a cap in whole MiB, as the checker's messages print it ("64 MiB").
std::string mib_text(uint64_t bytes);

}  // namespace dmrt
