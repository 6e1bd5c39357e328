// dmrt-bench --compare: several indexes side by side in one invocation, interleaved round robin,
// best of N each, with each one's ratio to the best local peer of its kind.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/cli/options.h"
#include "bench/indexes/registry.h"

namespace dmrt::bench {

// What an index is compared against: "hash" (point lookups by hash: RACE, HStore, tbb-hash,
// absl-hash) or "ordered" (trees, learned index, ordered maps).
std::string compare_kind(const IndexInfo& i);

// The indexes `list` names ("all", or names separated by commas), in its order; throws
// ConfigError naming an unknown or repeated one.
std::vector<IndexInfo> compare_indexes(const std::string& list, const std::vector<IndexInfo>& all);

// One finished run of a compared index: its round, whether the far-memory model was on, the
// throughput of its measured phase and the load average when it started.
struct CompareRun {
  std::string index;
  unsigned round = 0;
  bool far = false;
  double mops = 0;
  double load_avg = 0;
};

// The summary line (phase "compare") from the runs: best, median and worst of the rounds per
// index, the best local peer of its kind and the ratio to it, and the retention under the
// far-memory model. Ratios only: no target is judged. Pure: tests feed it numbers.
nlohmann::json compare_summary(const Options& opt, const std::vector<IndexInfo>& indexes,
                               const std::vector<CompareRun>& runs, unsigned rounds,
                               bool far_model);

// Runs the comparison: re-executes this binary once per index, variant and round (the command
// line minus the --compare flags, other indexes' flags, --json and --quiet), reads each run's
// JSON, appends the runs' lines and the summary to --json and prints a table. `groups` are the
// index flag groups (one per index, bench/main.cpp). Returns the exit code.
int run_compare(const CLI::App& app, const std::vector<std::pair<std::string, CLI::App*>>& groups,
                int argc, char** argv, const Options& opt, const std::string& list,
                unsigned rounds);

}  // namespace dmrt::bench
