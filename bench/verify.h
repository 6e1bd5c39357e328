// --verify: dmrt-bench records every operation of both phases (per client, in client order,
// with invocation/response times on the transport clock) and hands the history to
// verify_history(), which checks it for linearizability against the key-value model of
// runtime/kv.h (runtime/linearizability.h does the checking).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/options.h"
#include "bench/workload.h"
#include "runtime/kv.h"

namespace dmrt {
struct CheckResult;
}

namespace dmrt::bench {

// One completed operation as a client saw it. For kRmw the read part's result is in `ok`/`out`
// together with the update's; a read-modify-write is recorded as its two halves (kSearch then
// kUpdate) so that every entry is one index call.
struct RecordedOp {
  uint32_t client = 0;  // worker index (dense)
  OpKind kind = OpKind::kSearch;
  Key key = 0;
  std::string value;                              // insert/update: the value written
  bool ok = false;                                // the call's boolean result (scan: true)
  std::string out;                                // search: the value read
  std::vector<std::pair<Key, std::string>> rows;  // scan: the rows returned
  uint32_t scan_count = 0;                        // scan: the count asked for
  uint64_t invoke_ns = 0;
  uint64_t response_ns = 0;
};

// All clients' histories: history[client] in that client's program order.
using History = std::vector<std::vector<RecordedOp>>;

// False when this build cannot check histories: --verify then exits 2 before running.
bool verify_available();

// Checks `history` (the index starts empty). Returns the process exit code: 0 linearizable,
// 1 a violation (explained on stderr), 2 not available / could not decide.
// With options.history set, the history is also saved there (runtime/history_io.h) first.
int verify_history(const History& history, const Options& options);

// Prints the verdict lines (and the explanation of anything but "yes") to stdout; returns the exit
// code verify_history() documents. Shared with dmrt-check.
int report_check(const CheckResult& result);

}  // namespace dmrt::bench
