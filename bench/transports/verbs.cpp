// dmrt-bench on the verbs transport: its flags (--help-transport verbs) and its settings in the
// provenance. The driver's side is Env<VerbsTransport> (bench/transports/verbs_env.h).
#include <string>

#include "bench/cli/command_line.h"
#include "bench/cli/options.h"
#include "bench/transports/registry.h"
#include "dmrt/policies/verbs/cli.h"
#include "dmrt/runtime/cluster.h"

// Its own namespace: the transports' files share their names and are compiled together (unity).
namespace dmrt::bench::verbs_transport {
namespace {

constexpr std::string_view kTitle = "RDMA (--transport verbs)";

// The device's flags; --nodes and --node are dmrt-bench's own (the cluster's section).
void add_flags(CLI::App& app, CommandLine& c) {
  verbs::add_cli_flags(app, c.opt.verbs, std::string(kTitle));
}

// The flags as given; 0 / -1 / "" mean "ask the device" (the start-up report on stderr says what
// the device answered).
void provenance(nlohmann::json& j, const Options& opt, const ClusterConfig&) {
  const verbs::Options& v = opt.verbs;
  const char* masked = v.masked_cas == verbs::MaskedCasMode::kEmulate  ? "emulate"
                       : v.masked_cas == verbs::MaskedCasMode::kNative ? "native"
                                                                       : "auto";
  j["options"] = {{"device", v.device},
                  {"ib_port", v.port},
                  {"gid", v.gid_index},
                  {"mtu", v.mtu},
                  {"timeout_exp", v.ack_timeout},
                  {"retry", v.retry_count},
                  {"qp_depth", v.qp_depth},
                  {"connect_timeout_ms", v.connect_timeout_ms},
                  {"masked_cas", masked},
                  {"hugepages", v.hugepages},
                  {"node", opt.node},
                  {"node_from", opt.node < 0            ? "default"
                                : opt.node_from.empty() ? "--node"
                                                        : opt.node_from},
                  {"nodes", opt.nodes}};
}

const RegisterTransport kVerbs{
    {.name = "verbs", .title = kTitle, .add_flags = add_flags, .provenance = provenance}};

}  // namespace
}  // namespace dmrt::bench::verbs_transport
