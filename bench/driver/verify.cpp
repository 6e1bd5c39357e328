// dmrt-bench --verify: saves the recorded history when asked, then runs the per-key
// linearizability check of dmrt/check/linearizability.h (scans at their documented guarantee)
// within the run's check budget.
#include "bench/driver/verify.h"

#include <sys/stat.h>

#include <cstdio>

#include "dmrt/check/history_io.h"
#include "dmrt/check/linearizability.h"
#include "dmrt/check/report.h"

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
  options.check_budget().apply(opts);
  return report_check(check_history(history, opts));
}

namespace {

// A part that a process killed mid-run never saved: its journal stands for it.
std::vector<std::string> with_journals(std::vector<std::string> files) {
  for (std::string& f : files) {
    struct stat st {};
    const std::string journal = f + ".journal";
    if (::stat(f.c_str(), &st) != 0 && ::stat(journal.c_str(), &st) == 0) {
      std::printf("verify: %s is missing; its process's journal %s stands for it\n", f.c_str(),
                  journal.c_str());
      f = journal;
    }
  }
  return files;
}

}  // namespace

int check_history_files(const std::vector<std::string>& files, const Options& options) {
  History h;
  try {
    std::vector<ClockWidening> widened;
    h = load_history_union(with_journals(files), {}, &widened);
    if (!widened.empty()) std::printf("%s\n", clock_widening_line(widened).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "verify: %s\n", e.what());
    return 2;
  }
  std::printf("history: %zu operations from %zu parts\n", h.ops.size(), files.size());
  CheckOptions opts;
  opts.threads = 0;
  options.check_budget().apply(opts);
  return report_check(check_history(h, opts));
}

}  // namespace dmrt::bench
