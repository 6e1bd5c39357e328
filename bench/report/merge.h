// dmrt-bench --merge: the JSON reports of the processes of one multi-process run (--attach), one
// per process, merged into one report per phase.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dmrt::bench {

// Reads every phase line of `files` (each written by one compute process of a multi-process run)
// and writes one merged line per phase to `json` (JSON Lines, "-" = stdout), or prints a table
// when `json` is empty. Returns the exit code: 2 with a message for a file that is not such a
// report, an empty or oversized file (kMaxMergeFileBytes), and, unless `partial`, a phase that
// lacks some of the run's compute processes (each line says how many there were).
int merge_reports(const std::vector<std::string>& files, const std::string& json,
                  bool partial = false);

inline constexpr uint64_t kMaxMergeFileBytes = uint64_t{256} << 20;

}  // namespace dmrt::bench
