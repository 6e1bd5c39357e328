// dmrt-bench's trace flags (--trace-load, --trace-run, --write-trace; declared in
// bench/cli/options.h): checked against the workload flags they replace, and --write-trace
// carried out.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "bench/cli/options.h"
#include "bench/workload/workload.h"

namespace dmrt::bench {

// With a trace the files give the operations: the generator's flags are refused by name, the
// mix becomes the trace's (load only without --trace-run) and the workload is called "trace".
// Returns an error for the command line, or "".
std::string check_trace_flags(const CLI::App& app, Options& opt, Mix& mix);

// --write-trace DIR: writes the load and run phases the flags describe as trace files, prints
// what it wrote, and returns the exit code.
int write_trace(const Options& opt, const Mix& mix);

}  // namespace dmrt::bench
