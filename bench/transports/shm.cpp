// dmrt-bench on the shm transport: its flags (--help-transport shm), and its settings in the
// provenance. The driver's side is Env<ShmTransport> (bench/transports/shm_env.h).
#include <string>

#include "bench/cli/bind_flags.h"
#include "bench/cli/command_line.h"
#include "bench/cli/option_flags.h"
#include "bench/cli/option_json.h"
#include "bench/cli/options.h"
#include "bench/transports/registry.h"
#include "dmrt/policies/shm/cli.h"
#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/far_memory.h"

// Its own namespace: the transports' files share their names and are compiled together (unity).
namespace dmrt::bench::shm_transport {
namespace {

constexpr std::string_view kTitle = ShmOptions::kSection;

// Its fields (bench/transports/shm_options.h) as --shm-* flags, and the pool's own (--shm-pool).
void add_flags(CLI::App& app, CommandLine& c) {
  FlagList& list = c.transport_flags.emplace_back();
  declare_fields(list, c.opt.shm, {.prefix = "--shm-", .presence_switches = true});
  bind_flags(app, list);
  shm::add_cli_flags(app, c.opt.shm_pool, std::string(kTitle));
  app.get_option("--shm-pool")->excludes(app.get_option("--attach"));
  for (const FlagDecl& d : list.all()) c.shm_only.push_back(app.get_option(d.name));
  c.shm_only.push_back(app.get_option("--shm-pool"));
}

// The flags as given (null: not given), then the far-memory figures each memory node ran with.
void provenance(nlohmann::json& j, const Options& opt, const ClusterConfig& config) {
  j.update(option_fields_json(opt.shm));
  nlohmann::json far = nlohmann::json::array();
  for (NodeId n : config.memory_nodes())
    far.push_back({{"node", n},
                   {"latency_ns", config.nodes[n].far.latency_ns},
                   {"gbps", config.nodes[n].far.gbps}});
  j["far_memory"] = far;
}

const RegisterTransport kShm{
    {.name = "shm", .title = kTitle, .add_flags = add_flags, .provenance = provenance}};

}  // namespace
}  // namespace dmrt::bench::shm_transport
