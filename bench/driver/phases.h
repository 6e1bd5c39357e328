// More run phases on one loaded index (--then): what each phase runs, parsed from the flag.
//
// A paper-size experiment loads tens of millions of keys, and the load is most of its time. One
// load can serve every workload of a figure (CHIME Fig. 12) or every cache size (Fig. 18b): the
// index stays as the previous phase left it, and each phase is one more JSON line. A step may
// also grow the index (keys=N): a "grow" phase inserts the records up to N first, so that one
// load serves every size of a figure against items (CHIME Fig. 14).
#pragma once

#include <string>
#include <vector>

#include "bench/cli/options.h"
#include "bench/workload/workload.h"

namespace dmrt::bench {

// One run phase: the options it runs with (the command's, then each --then step's changes on top
// of the previous phase's) and its mix.
struct RunPhase {
  Options opt;
  Mix mix;
  bool new_cache = false;  // its cache size differs from the previous phase's: re-attach
  uint64_t grow = 0;       // records a grow phase inserts before it runs (keys=N: N - previous)
};

// The keys a --then step may set: the run phase's own parameters, and keys, which only grows.
// Everything else shapes the index or the load, which one load cannot serve twice.
inline constexpr const char* kThenKeys =
    "workload, distribution, zipf-theta, ops, seconds, cache-mb, keys, warmup-ops";

// The run phases of a command whose first run phase is (first, mix): that one, then one per
// ';'-separated step of first.then, each a ','-separated list of KEY=VALUE. `dist_given`: the
// command line gave --distribution (a step's new workload then keeps it instead of its default).
// Returns "" or the usage error, naming the step.
std::string plan_run_phases(const Options& first, const Mix& mix, bool dist_given,
                            std::vector<RunPhase>& out);

// The first run phase's workload that scans ("" when none does), --then's phases included.
std::string scanning_workload(const Options& first, const Mix& mix);

// How many inserts the phases may make together: each grow phase's records, and twice what each
// --ops phase inserts; a --seconds phase, open-ended, counts as --keys operations.
uint64_t expected_inserts(const std::vector<RunPhase>& phases);

}  // namespace dmrt::bench
