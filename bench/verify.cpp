// dmrt-bench --verify: turns the bench's per-client records into a checker History and runs the
// per-key linearizability check of runtime/linearizability.h (scans at their documented guarantee).
#include "bench/verify.h"

#include <cstdio>

#include "runtime/history.h"
#include "runtime/history_io.h"
#include "runtime/linearizability.h"

namespace dmrt::bench {

bool verify_available() {
  return true;
}

int verify_history(const History& history, const Options& options) {
  std::vector<HistoryRecorder> recorders;
  recorders.reserve(history.size());
  for (size_t c = 0; c < history.size(); ++c) {
    HistoryRecorder& r = recorders.emplace_back(static_cast<uint32_t>(c), history[c].size());
    for (const RecordedOp& op : history[c]) {
      switch (op.kind) {
        case OpKind::kSearch:
          r.search(op.key, op.ok, op.out, op.invoke_ns, op.response_ns);
          break;
        case OpKind::kInsert:
          r.insert(op.key, op.value, op.ok, op.invoke_ns, op.response_ns);
          break;
        case OpKind::kUpdate:
          r.update(op.key, op.value, op.ok, op.invoke_ns, op.response_ns);
          break;
        case OpKind::kDelete:
          r.remove(op.key, op.ok, op.invoke_ns, op.response_ns);
          break;
        case OpKind::kScan:
          r.scan(op.key, op.scan_count, op.rows, op.invoke_ns, op.response_ns);
          break;
        case OpKind::kRmw:  // the runner records rmw as its search and update halves
          break;
      }
    }
  }
  dmrt::History merged = merge_histories(recorders);
  if (!options.history.empty()) {
    try {
      save_history(merged, options.history);
      std::printf("history: %zu operations written to %s\n", merged.ops.size(),
                  options.history.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "history: %s\n", e.what());
      return 2;
    }
  }
  CheckOptions opts;
  opts.threads = 0;  // the run is over: use every core
  return report_check(check_history(merged, opts));
}

int report_check(const CheckResult& res) {
  const char* verdict = res.linearizable ? "yes" : (res.unknown ? "unknown" : "no");
  std::printf("linearizable: %s\n", verdict);
  std::printf("operations checked: %llu (%llu keys, %llu scans) in %.2f s\n",
              static_cast<unsigned long long>(res.operations_checked),
              static_cast<unsigned long long>(res.keys_checked),
              static_cast<unsigned long long>(res.scans_checked), res.seconds);
  if (!res.linearizable) std::printf("%s\n", res.explain().c_str());
  if (res.linearizable) return 0;
  return res.unknown ? 2 : 1;
}

}  // namespace dmrt::bench
