// dmrt-check: checks a history saved by `dmrt-bench --verify --history FILE` (or written by any
// program through dmrt/check/history_io.h) again, offline: with a larger budget, on one key, or
// after a change to the checker. Several files are checked as one history, their union: the parts
// that the processes of a multi-process run saved (dmrt-bench --attach). On one host their
// timestamps come from one clock; parts from other hosts carry a clock bound ("# clock bound_ns N")
// and are widened by it before they join (docs/correctness.md, "Histories across hosts"). Parts
// name their run's compute processes ("# part R of M"): a set with parts missing is refused unless
// --allow-partial.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "dmrt/check/history_io.h"
#include "dmrt/check/linearizability.h"
#include "dmrt/check/report.h"
#include "tools/common/cli_help.h"
#include "tools/common/cli_numbers.h"
#include "tools/common/version.h"

int main(int argc, char** argv) {
  CLI::App app{"dmrt-check: linearizability check of a saved dmrt history"};
  dmrt::tools::use_help_formatter(app);
  dmrt::tools::add_version_flag(app, "dmrt-check");
  std::vector<std::string> files;
  std::vector<uint64_t> keys;
  dmrt::CheckOptions opts;
  opts.threads = 0;
  dmrt::CheckBudget budget;
  uint64_t max_history_mb = dmrt::HistoryLimits{}.max_bytes >> 20;
  bool no_scans = false, no_shrink = false, allow_partial = false;
  app.add_option("FILE", files,
                 "History file (dmrt-bench --history); several: the parts of one run, checked "
                 "as their union (no client may appear in two)")
      ->required();
  app.add_option("--key", keys, "Check only the point operations on these keys (repeatable)");
  app.add_option("--max-steps", opts.max_steps_per_key,
                 "Search steps per key before it is declared undecided")
      ->check(CLI::Range(uint64_t{1}, UINT64_MAX))
      ->capture_default_str();
  app.add_option("--deadline", budget.seconds,
                 "Seconds for the whole check; then the verdict is unknown (0 = none)")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  app.add_option("--memory-mb", budget.memory_mb,
                 "MiB the search may hold; then the verdict is unknown (0 = none)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--threads", opts.threads, "Keys checked in parallel (0 = every core)")
      ->check(CLI::Range(0u, 4096u))
      ->capture_default_str();
  app.add_option("--max-history-mb", max_history_mb,
                 "Refuse a history file larger than this many MiB")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 24))
      ->capture_default_str();
  app.add_flag("--no-scans", no_scans, "Skip the scan checks");
  app.add_flag("--no-shrink", no_shrink, "Report a violation's whole key history, unshrunk");
  app.add_flag("--allow-partial", allow_partial,
               "Check the parts given even when some of their run's parts are missing (each "
               "part names its run's compute processes). A partial check may report false "
               "violations: a missing process's writes explain what the others read");
  // "-1" for a count, NaN for a deadline, 1e6 for 1000000: every numeric flag, checked once.
  dmrt::tools::strict_numbers(app);
  CLI11_PARSE(app, argc, argv);
  opts.check_scans = !no_scans;
  opts.shrink = !no_shrink;
  budget.apply(opts);

  dmrt::History h;
  std::vector<dmrt::ClockWidening> widened;
  std::string partial;
  try {
    dmrt::HistoryLimits limits;
    limits.max_bytes = max_history_mb << 20;
    h = dmrt::load_history_union(files, limits, &widened, allow_partial ? &partial : nullptr);
  } catch (const dmrt::HistoryIncomplete& e) {
    std::fprintf(stderr,
                 "dmrt-check: %s: give every part, or --allow-partial to check these alone (it "
                 "may report false violations)\n",
                 e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dmrt-check: %s\n", e.what());
    return 2;
  }
  if (!keys.empty()) {
    std::erase_if(h.ops, [&](const dmrt::Operation& o) {
      return o.kind == dmrt::OpKind::kScan ||
             std::find(keys.begin(), keys.end(), o.key) == keys.end();
    });
  }
  std::string names;
  for (const std::string& f : files) names += (names.empty() ? "" : ", ") + f;
  std::printf("history: %zu operations from %s\n", h.ops.size(), names.c_str());
  if (!widened.empty()) std::printf("%s\n", dmrt::clock_widening_line(widened).c_str());
  if (!partial.empty())
    std::printf("partial: %s; a violation below may be explained by a missing part\n",
                partial.c_str());
  return dmrt::report_check(dmrt::check_history(h, opts));
}
