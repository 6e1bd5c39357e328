// How a dmrt-bench result was made: build, host, transport settings, start time and command line,
// added as "provenance" to every JSON line so that a result file alone says where it came from.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/cli/options.h"
#include "dmrt/runtime/cluster.h"

namespace dmrt::bench {

// The "build" object: version, git commit, build type, compiler, compiled-in features.
nlohmann::json build_json();
// The "host" object: name, CPU model, cores, NUMA nodes, kernel (uname).
nlohmann::json host_json();
// The "transport" object: its name and the settings it ran with (sim's cost model, verbs' device
// flags, shm's execution mode and far-memory figures per memory node).
nlohmann::json transport_json(const Options& opt, const ClusterConfig& config);
// `t` as UTC ISO 8601 with seconds, e.g. 2026-11-26T21:03:04Z.
std::string utc_iso8601(std::chrono::system_clock::time_point t);
// The arguments as one shell command line (each quoted where the shell would need it).
std::string shell_command(const std::vector<std::string>& argv);

// Everything above plus "start_utc", "argv" and "command"; `config_file`, when not empty, is the
// --config file, whose text is kept too (the flags alone do not say what it held).
nlohmann::json provenance_json(const std::vector<std::string>& argv,
                               std::chrono::system_clock::time_point start, const Options& opt,
                               const ClusterConfig& config, const std::string& config_file);

}  // namespace dmrt::bench
