// dmrt-bench's command line once parsed: the defaults that depend on other flags, the refused
// combinations, the cluster and this process's node in it, the output files, the transport.
// Each step returns "" or the usage error; main.cpp runs them in this order.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "bench/cli/command_line.h"
#include "bench/indexes/spec.h"
#include "bench/workload/workload.h"
#include "dmrt/runtime/cluster.h"

namespace dmrt::bench {

// The workload and key flags, then the defaults that follow from them (distribution, stall
// bound, progress). Fills `mix`. A --write-trace run ends after this step.
std::string resolve_workload(const CLI::App& app, CommandLine& c, Mix& mix);

// The embedded cluster's size flags (compute nodes, region bytes).
std::string resolve_sizes(const CLI::App& app, CommandLine& c);

// The chosen index's flags: none of another index's, and its own consistent.
std::string resolve_index_flags(const CommandLine& c, const IndexFlags& chosen);

// The cluster (file, --nodes or embedded), this process's node (flag or launcher rank), and the
// flags that only some transports or modes take.
std::string resolve_cluster(CommandLine& c, ClusterConfig& config);

// Output paths with {node} expanded, checked distinct and writable.
std::string resolve_outputs(CommandLine& c, const ClusterConfig& config);

// --transport as compiled in, and the transport's own resolution (bench/transports/NAME.cpp; on
// sim, the simulated clients as fibers of one thread).
std::string resolve_transport(CommandLine& c, const ClusterConfig& config);

}  // namespace dmrt::bench
