// dmrt-bench --verify: saves the recorded history when asked, then runs the per-key
// linearizability check of check/linearizability.h (scans at their documented guarantee) within
// the run's check budget.
#include "bench/verify.h"

#include <cstdio>

#include "check/history_io.h"
#include "check/linearizability.h"
#include "check/report.h"

namespace dmrt::bench {

bool verify_available() {
  return true;
}

int verify_history(History&& history, const Options& options) {
  if (!options.history.empty()) {
    try {
      save_history(history, options.history);
      std::printf("history: %zu operations written to %s\n", history.ops.size(),
                  options.history.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "history: %s\n", e.what());
      return 2;
    }
  }
  CheckOptions opts;
  opts.threads = 0;  // the run is over: use every core
  options.check_budget.apply(opts);
  return report_check(check_history(history, opts));
}

}  // namespace dmrt::bench
