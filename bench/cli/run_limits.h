// dmrt-bench's checks of a run's totals against this machine, made before anything starts.
#pragma once

#include <string>

#include "bench/cli/options.h"

namespace dmrt::bench {

// Refuses (ConfigError naming the numbers) a run whose fiber stacks, compute-side cache budget or
// --verify history would not fit this machine's memory; for a --verify --seconds run, sets
// opt.verify_max_ops, the operations its history may hold (unless `max_ops_given`, when the
// user's smaller figure stands).
void check_limits(Options& opt, const Mix& mix, bool max_ops_given);

// "" when --json and --history can be written, else the error. Run before the run, so that a typo
// costs nothing; it creates no file, so that a run that fails before writing leaves none (an
// empty part would read as a process that failed).
std::string check_writable(const Options& opt);

// "" when --json, --history and --merged-json name different files for every node ({node}
// expanded: --merged-json out1.json is node 1's part of --json out{node}.json), else the error.
std::string check_distinct_outputs(const Options& opt);

}  // namespace dmrt::bench
