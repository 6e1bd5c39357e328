// --verify: dmrt-bench records every operation of both phases (one dmrt/check/history.h recorder
// per client, with invocation/response times on the transport clock) and hands the merged history
// to verify_history(), which checks it for linearizability against the key-value model of
// dmrt/runtime/kv.h (dmrt/check/linearizability.h does the checking).
#pragma once

#include <string>
#include <vector>

#include "bench/cli/options.h"
#include "dmrt/check/history.h"

namespace dmrt::bench {

// False when this build cannot check histories: --verify then exits 2 before running.
bool verify_available();

// Checks `history` (the index starts empty) within the --verify-seconds / --verify-memory-mb
// budget. Returns the process exit code: 0 linearizable, 1 a violation (explained), 2 not
// available / could not decide (the reason is printed). With options.history set, the history is
// also saved there (dmrt/check/history_io.h) first.
int verify_history(History&& history, const Options& options);

// Checks the union of the histories in `files` (the parts of one multi-process run, each widened
// by its clock bound: dmrt/check/history_io.h). Returns the exit code, as verify_history.
int check_history_files(const std::vector<std::string>& files, const Options& options);

}  // namespace dmrt::bench
