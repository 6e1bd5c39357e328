// dmrt-node: serves one memory (or compute) node of a cluster in a process of its own and hosts
// the memory-node services asked for by name (--service, see --list-services), until a peer or a
// signal stops it. Hosts: verbs (node_verbs.cpp, when built) and shm (node_shm.cpp).
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <string>

#include "dmrt/runtime/error.h"
#include "dmrt/runtime/launcher_rank.h"
#if DMRT_TRANSPORT_VERBS
#include "dmrt/policies/verbs/cli.h"
#endif
#include "tools/common/cli_config.h"
#include "tools/common/cli_help.h"
#include "tools/common/cli_numbers.h"
#include "tools/common/version.h"
#include "tools/dmrt-node/node.h"

namespace dmrt::node {

namespace {
volatile std::sig_atomic_t g_signal = 0;
void on_signal(int) {
  g_signal = 1;
}
}  // namespace

bool signalled() {
  return g_signal != 0;
}

namespace {

// One transport's way of hosting a node: its flags live in `group` (refused with another
// --transport), `run` runs the node once the command line has been parsed.
struct Host {
  std::string transport;
  CLI::App* group;
  std::function<int(const NodeArgs&, const Services&)> run;
};

Host add_shm_host(CLI::App& app) {
  auto* group = app.add_option_group("shm", "flags of --transport shm");
  auto sa = std::make_shared<ShmArgs>();
  group->add_option("--pool", sa->pool,
                    "the shm pool: a NAME (/dev/shm/dmrt.NAME.*, one host), or a PATH with a '/': "
                    "a device-dax (/dev/daxX.Y), a PCI BAR (/sys/bus/pci/devices/D/resource2, "
                    "ivshmem) or a file, whose processes may be on several hosts (waits poll)");
  auto* create = group->add_flag(
      "--create", sa->create,
      "create the pool (the memory node process of a multi-process shm run: it serves until "
      "SIGINT/SIGTERM, then removes the pool); without it, attach to a pool another process made");
  auto* mn = group
                 ->add_option("--memory-nodes", sa->memory_nodes,
                              "with --create and no --cluster: memory nodes")
                 ->check(CLI::Range(1u, 1024u))
                 ->capture_default_str();
  auto* cn = group
                 ->add_option("--compute-nodes", sa->compute_nodes,
                              "with --create and no --cluster: compute nodes (one dmrt-bench "
                              "--attach process each)")
                 ->check(CLI::Range(1u, 1024u))
                 ->capture_default_str();
  auto* mb = group
                 ->add_option("--memory-mb", sa->memory_mb,
                              "with --create and no --cluster: region MiB per memory node")
                 ->check(CLI::Range(uint64_t{64}, uint64_t{1} << 24))
                 ->capture_default_str();
  auto* numa = group
                   ->add_option("--numa-node", sa->numa_node,
                                "with --create: bind the memory nodes' regions to this NUMA "
                                "node (mbind; over the cluster file's numa); with --pool PATH, "
                                "the whole pool's mapping (a file's pages)")
                   ->check(CLI::Range(0, 1023));
  for (CLI::Option* o : {mn, cn, mb, numa}) o->needs(create);
  return {"shm", group, [sa](const NodeArgs& args, const Services& registry) {
            return run_shm(*sa, args, registry);
          }};
}

#if DMRT_TRANSPORT_VERBS
Host add_verbs_host(CLI::App& app, CLI::Option* cluster) {
  auto va = std::make_shared<VerbsArgs>();
  auto* group = app.add_option_group("verbs", "flags of --transport verbs");
  auto* nodes = group->add_option(
      "--nodes", va->nodes, "the cluster inline: role:size@host:port,... (instead of --cluster)");
  cluster->excludes(nodes);
  group->add_option("--stop", va->stop,
                    "ask the dmrt-node serving host:port to exit, then exit (nothing else runs)");
  verbs::add_cli_flags(*group, va->opts);
  return {"verbs", group, [va](const NodeArgs& args, const Services& registry) {
            va->cluster_file = args.cluster_file;
            return run_verbs(*va, args, registry);
          }};
}
#endif

}  // namespace

}  // namespace dmrt::node

int main(int argc, char** argv) {
  using namespace dmrt;
  using namespace dmrt::node;
  Services registry;
  NodeArgs args;
  bool list = false;
  CLI::App app(
      "dmrt-node: serves node N of a cluster (its region, the bootstrap, an echo service on "
      "mailbox 0) and the memory-node services named with --service, until a peer sends STOP "
      "(dmrt-node --stop host:port, dmrt-bench --stop-nodes) or SIGINT/SIGTERM arrives.",
      "dmrt-node");
  tools::use_help_formatter(app);
  tools::add_version_flag(app, "dmrt-node");
  std::vector<std::string> names;
  for (const ServiceInfo& s : Services::kServices) names.emplace_back(s.name);
  app.add_option("--service", args.services, "run this memory-node service (repeatable)")
      ->check(CLI::IsMember(names));
  app.add_flag("--list-services", list, "list the services this dmrt-node can run, then exit");
  app.add_option("--node", args.node,
                 "the node of the cluster this process serves (default: the rank a launcher "
                 "gives, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, MV2_COMM_WORLD_RANK or "
                 "SLURM_PROCID)")
      ->check(CLI::Range(0L, 65534L));
  bool no_echo = false;
  app.add_flag("--no-echo", no_echo, "do not run the echo service on mailbox 0");
  auto* cluster = app.add_option("--cluster", args.cluster_file,
                                 "cluster file (TOML; verbs, and shm with --create; shm --pool "
                                 "PATH without --create: the geometry the pool must have)")
                      ->check(CLI::ExistingFile);
  std::vector<Host> hosts;
#if DMRT_TRANSPORT_VERBS
  hosts.push_back(add_verbs_host(app, cluster));
#else
  (void)cluster;
#endif
  hosts.push_back(add_shm_host(app));
  std::vector<std::string> transports;
  for (const Host& h : hosts) transports.push_back(h.transport);
  std::string transport = transports.front();
  app.add_option("--transport", transport, "how the node is served")
      ->check(CLI::IsMember(transports))
      ->capture_default_str();
  auto groups = registry.add_flags(app);
  std::string write_config_path;
  tools::add_config_flags(app, write_config_path);
  tools::strict_numbers(app);  // every numeric flag, also from --config
  try {
    app.parse(argc, argv);
  } catch (const CLI::ConfigError& e) {
    std::cerr << "dmrt-node: " << tools::config_error_text(e) << std::endl;
    return static_cast<int>(CLI::ExitCodes::ConfigError);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!write_config_path.empty()) {
    try {
      tools::write_config(app, write_config_path);
    } catch (const std::exception& e) {
      std::cerr << "dmrt-node: " << e.what() << std::endl;
      return 1;
    }
    return 0;
  }
  if (list) {
    for (const ServiceInfo& s : Services::kServices)
      std::printf("%-12s bit %-2u %.*s\n", std::string(s.name).c_str(), s.bit,
                  static_cast<int>(s.summary.size()), s.summary.data());
    return 0;
  }
  args.echo = !no_echo;
  try {
    std::set<std::string> seen;
    for (const std::string& s : args.services)
      if (!seen.insert(s).second) throw ConfigError("--service " + s + " given twice");
    // A service's flags without the service would be silently ignored: refuse them.
    for (size_t i = 0; i < groups.size(); ++i) {
      if (!groups[i] || seen.count(std::string(Services::kServices[i].name))) continue;
      for (const CLI::Option* o : groups[i]->get_options())
        if (o->count() > 0)
          throw ConfigError(o->get_name() + " is a flag of --service " +
                            std::string(Services::kServices[i].name) + ", which is not running");
    }
    const Host* host = nullptr;
    for (const Host& h : hosts) {
      if (h.transport == transport) {
        host = &h;
        continue;
      }
      for (const CLI::Option* o : h.group->get_options())
        if (o->count() > 0)
          throw ConfigError(o->get_name() + " is a flag of --transport " + h.transport +
                            ", not of --transport " + transport);
    }
    // One srun / mpirun starts every node from one cluster file: the rank is the node id.
    if (args.node < 0) {
      if (auto rank = launcher_rank()) {
        args.node = rank->rank;
        std::cerr << "dmrt-node: node " << rank->rank << " from " << rank->variable
                  << " (no --node)" << std::endl;
      }
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    return host->run(args, registry);
  } catch (const std::exception& e) {
    std::cerr << "dmrt-node: " << e.what() << std::endl;
    return 1;
  }
}
