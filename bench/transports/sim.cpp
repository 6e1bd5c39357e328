// dmrt-bench on the sim transport: its flags (--help-transport sim), how it resolves the command
// line (every client a fiber of one thread, in virtual time), and its options in the provenance.
// The driver's side is Env<SimTransport> (bench/transports/sim_env.h).
#include <cstdio>
#include <string>

#include "bench/cli/command_line.h"
#include "bench/cli/options.h"
#include "bench/transports/registry.h"
#include "dmrt/policies/sim/cli.h"
#include "dmrt/policies/sim/report_json.h"
#include "dmrt/runtime/cluster.h"

// Its own namespace: the transports' files share their names and are compiled together (unity).
namespace dmrt::bench::sim_transport {
namespace {

constexpr std::string_view kTitle = "Simulator (--transport sim)";

// The cost model's flags; the nodes are dmrt-bench's own --compute-nodes and --memory-nodes.
void add_flags(CLI::App& app, CommandLine& c) {
  sim::add_cli_flags(app, c.opt.sim, std::string(kTitle), false);
}

std::string resolve_sizes(const CLI::App& app, CommandLine& c) {
  Options& opt = c.opt;
  opt.sim.compute_nodes = opt.compute_nodes;
  if (app.get_option("--sim-memory-bytes")->count() == 0) return "";
  if (opt.transport != "sim") return "--sim-memory-bytes is a flag of --transport sim";
  if (c.memory_mb->count() > 0)
    return "give one of --memory-mb and --sim-memory-bytes (both size the regions)";
  if (!opt.cluster.empty())
    return "--sim-memory-bytes cannot be combined with --cluster (the file sizes the regions)";
  opt.memory_bytes = opt.sim.memory_bytes;
  return "";
}

// Every simulated client is a fiber of one OS thread, in virtual time.
std::string resolve(CommandLine& c, const ClusterConfig& config) {
  Options& opt = c.opt;
  if (!opt.cluster.empty())
    opt.sim.compute_nodes = static_cast<unsigned>(config.compute_nodes().size());
  opt.compute_nodes = opt.sim.compute_nodes;
  const unsigned fibers = opt.sim.compute_nodes * opt.sim.clients_per_node;
  if (opt.threads != 1 || opt.fibers != 1)
    std::fprintf(stderr,
                 "dmrt-bench: --threads %u --fibers %u do not apply to --transport sim: its "
                 "%u clients (--compute-nodes x --clients-per-node) are fibers of one thread\n",
                 opt.threads, opt.fibers, fibers);
  opt.threads = 1;
  opt.fibers = fibers;
  // One operation's wall-clock time grows with the whole simulated cluster (every other client's
  // events run while it waits), so only a real hang reaches this bound.
  if (c.stall->count() == 0) opt.stall_seconds = 1800;
  return "";
}

// As the sim Env builds them (bench/transports/sim_env.h): the regions are dmrt-bench's.
void provenance(nlohmann::json& j, const Options& opt, const ClusterConfig& config) {
  sim::Options o = opt.sim;
  o.memory_nodes = static_cast<unsigned>(config.memory_nodes().size());
  j["options"] = o;
  if (opt.cluster.empty()) {
    j["options"]["memory_bytes"] = opt.memory_bytes;
    j["options"]["compute_bytes"] = opt.compute_mb << 20;
  }
  j["options"]["saturation_wait_ns"] = o.saturation_wait_ns;
}

uint64_t fiber_stack_bytes(const Options& opt) {
  return opt.sim.fiber_stack_bytes;
}

const RegisterTransport kSim{{.name = "sim",
                              .title = kTitle,
                              .add_flags = add_flags,
                              .resolve_sizes = resolve_sizes,
                              .resolve = resolve,
                              .provenance = provenance,
                              .fiber_stack_bytes = fiber_stack_bytes}};

}  // namespace
}  // namespace dmrt::bench::sim_transport
