// dmrt-bench --merge: the JSON reports of the processes of one multi-process run (--attach), one
// per process, merged into one report per phase.
#pragma once

#include <string>
#include <vector>

namespace dmrt::bench {

// Reads every phase line of `files` (each written by one dmrt-bench --attach process) and writes
// one merged line per phase to `json` (JSON Lines, "-" = stdout), or prints a table when `json`
// is empty. Returns the exit code (2 with a message for a file that is not such a report).
int merge_reports(const std::vector<std::string>& files, const std::string& json);

}  // namespace dmrt::bench
