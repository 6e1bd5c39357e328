// Every transport dmrt-bench runs on registers itself here, from its own file
// (bench/transports/NAME.cpp): its --help section, its flags, its part of resolving the command
// line and its provenance. The driver's side of it is Env<T> (bench/transports/NAME_env.h); the
// list of transports itself is the build's (dmrt/policies/transports.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace CLI {
class App;
}
namespace dmrt {
class ClusterConfig;
}

namespace dmrt::bench {

struct CommandLine;
struct Options;

struct TransportEntry {
  std::string_view name;   // --transport NAME, the policy's kName
  std::string_view title;  // its --help section (--help-transport NAME)
  // Adds its flags to `app`, in section `title` (CLI11 option groups), writing into `c`.
  void (*add_flags)(CLI::App& app, CommandLine& c) = nullptr;
  // What its flags size of the common options (sim: --compute-nodes, --sim-memory-bytes), for
  // every registered transport, chosen or not, before the cluster is built ("" when fine).
  std::string (*resolve_sizes)(const CLI::App& app, CommandLine& c) = nullptr;
  // Its part of resolving the command line once the cluster is known, before the limits and the
  // provenance are taken ("" when fine, else a usage error).
  std::string (*resolve)(CommandLine& c, const ClusterConfig& config) = nullptr;
  // Its settings as resolved, added to the provenance's "transport" object.
  void (*provenance)(nlohmann::json& j, const Options& opt, const ClusterConfig& config) = nullptr;
  // The stack of one client fiber, when the transport sizes its own (0: the Scheduler's).
  uint64_t (*fiber_stack_bytes)(const Options& opt) = nullptr;
};

// Adds a transport to the list; called by a static object in its file (RegisterTransport).
void register_transport(const TransportEntry& e);

// Every registered transport, in the order of the build's list (dmrt/policies/transports.h).
const std::vector<TransportEntry>& registered_transports();
// The transport named `name`, or null.
const TransportEntry* find_transport(std::string_view name);
// Why `name` cannot be run: not a transport of dmrt, or not compiled into this dmrt-bench.
std::string transport_unavailable(std::string_view name);

struct RegisterTransport {
  explicit RegisterTransport(const TransportEntry& e) { register_transport(e); }
};

}  // namespace dmrt::bench
