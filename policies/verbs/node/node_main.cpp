// dmrt-node: serves one node of a verbs cluster. Registers and formats the node's region, answers
// bootstrap requests (QP exchange, barrier, stop) on the node's address, runs the request/response
// echo service on mailbox 0, and stays up until a peer sends STOP or it gets SIGINT/SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "indexes/rolex/retrain.h"
#include "policies/verbs/echo_service.h"
#include "policies/verbs/service.h"
#include "policies/verbs/transport.h"
#include "runtime/client.h"
#include "runtime/error.h"
#include "runtime/layout.h"
#include "runtime/local_memory.h"

namespace {

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int) {
  g_signal = 1;
}

void usage() {
  std::cerr
      << "usage: dmrt-node (--cluster FILE.toml | --nodes role:size@host:port,...) --node N\n"
         "                 [--device NAME] [--port N] [--gid N] [--mtu BYTES]\n"
         "                 [--timeout-exp N] [--retry N] [--connect-timeout-ms MS]\n"
         "                 [--masked-cas auto|emulate|native] [--hugepages] [--no-service]\n"
         "                 [--service rolex [--rolex-root-slot K]]\n"
         "  Serves node N's region over RDMA until a peer sends STOP (dmrt-node --stop host:port)\n"
         "  or SIGINT/SIGTERM arrives.\n"
         "       dmrt-node --stop host:port      ask a running dmrt-node to exit\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dmrt;
  std::string cluster_file, nodes_arg, stop_addr;
  long node = -1;
  bool service = true;         // the echo service on mailbox 0
  bool rolex_service = false;  // ROLEX's retraining service (indexes/rolex/retrain.h)
  unsigned rolex_root_slot = rolex::ServiceOptions{}.root_slot;
  verbs::Options opts;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw ConfigError(a + " needs a value");
        return argv[++i];
      };
      auto num = [&](const std::string& v) -> long {
        char* end = nullptr;
        long x = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end) throw ConfigError(a + ": '" + v + "' is not a number");
        return x;
      };
      if (a == "--cluster")
        cluster_file = next();
      else if (a == "--nodes")
        nodes_arg = next();
      else if (a == "--node")
        node = num(next());
      else if (a == "--device")
        opts.device = next();
      else if (a == "--port")
        opts.port = static_cast<int>(num(next()));
      else if (a == "--gid")
        opts.gid_index = static_cast<int>(num(next()));
      else if (a == "--mtu")
        opts.mtu = static_cast<int>(num(next()));
      else if (a == "--timeout-exp")
        opts.ack_timeout = static_cast<uint8_t>(num(next()));
      else if (a == "--retry")
        opts.retry_count = static_cast<uint8_t>(num(next()));
      else if (a == "--connect-timeout-ms")
        opts.connect_timeout_ms = static_cast<uint32_t>(num(next()));
      else if (a == "--hugepages")
        opts.hugepages = true;
      else if (a == "--no-service")
        service = false;
      else if (a == "--service") {
        std::string n = next();
        if (n != "rolex") throw ConfigError("--service: the services are: rolex");
        rolex_service = true;
      } else if (a == "--rolex-root-slot")
        rolex_root_slot = static_cast<unsigned>(num(next()));
      else if (a == "--stop")
        stop_addr = next();
      else if (a == "--masked-cas") {
        std::string m = next();
        if (m == "auto")
          opts.masked_cas = verbs::MaskedCasMode::kAuto;
        else if (m == "emulate")
          opts.masked_cas = verbs::MaskedCasMode::kEmulate;
        else if (m == "native")
          opts.masked_cas = verbs::MaskedCasMode::kNative;
        else
          throw ConfigError("--masked-cas: expected auto, emulate or native");
      } else if (a == "-h" || a == "--help") {
        usage();
        return 0;
      } else {
        throw ConfigError("unknown argument '" + a + "'");
      }
    }
    if (!stop_addr.empty()) {
      verbs::Cluster::stop_node(stop_addr, opts.connect_timeout_ms);
      std::cout << "dmrt-node at " << stop_addr << " stopped" << std::endl;
      return 0;
    }
    if (cluster_file.empty() == nodes_arg.empty())
      throw ConfigError("give exactly one of --cluster FILE and --nodes SPEC");
    if (node < 0) throw ConfigError("--node N is required");
    ClusterConfig config = cluster_file.empty() ? verbs::parse_cluster_arg(nodes_arg)
                                                : ClusterConfig::from_toml_file(cluster_file);
    if (static_cast<size_t>(node) >= config.size())
      throw ConfigError("--node " + std::to_string(node) + " but the cluster has " +
                        std::to_string(config.size()) + " nodes");
    if (config.nodes[node].address.empty())
      throw ConfigError("node " + std::to_string(node) + " has no address to serve on");
    opts.threads = rolex_service ? 2 : 1;  // slot 0: echo; slot 1: the hosted service
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    verbs::Cluster cluster(config, static_cast<NodeId>(node), opts);
    std::cout << cluster.report() << std::endl;
    std::cout << "dmrt-node " << node << " ready on " << config.nodes[node].address << std::endl;

    std::exception_ptr service_error;
    verbs::EchoStats echo_stats;
    std::thread svc;
    if (service) {
      svc = std::thread([&] {
        try {
          verbs::run_echo_service(
              cluster, 0, [&] { return cluster.stop_requested() || g_signal; }, echo_stats);
        } catch (...) {
          service_error = std::current_exception();
          cluster.request_stop();
        }
      });
    }
    // A hosted service runs on client-thread slot 1; the node advertises it in its services word
    // (compute nodes read it to decide who retrains). Written by this CPU: no one CASes it.
    std::unique_ptr<verbs::ServiceHost> host;
    if (rolex_service) {
      rolex::ServiceOptions so;
      so.root_slot = rolex_root_slot;
      host = std::make_unique<verbs::ServiceHost>(
          cluster, 1, 1,
          [so](ServiceContext<VerbsTransport>& ctx) { rolex::retrain_service(ctx, so); });
      local::store_word(cluster.local_region() + layout::kServicesOffset,
                        service_bit(ServiceId::kRolexRetrain));
      std::cout << "dmrt-node " << node << " runs the rolex retraining service (root slot "
                << rolex_root_slot << ")" << std::endl;
    }
    while (!cluster.stop_requested() && !g_signal)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cluster.request_stop();
    if (host) host->stop();
    if (svc.joinable()) svc.join();
    if (service_error) std::rethrow_exception(service_error);
    if (echo_stats.bad_messages)
      std::cout << "dmrt-node " << node << ": " << echo_stats.bad_messages
                << " bad message(s) skipped by the echo service (last: " << echo_stats.last_error
                << ")" << std::endl;
    std::cout << "dmrt-node " << node << " stopped" << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dmrt-node: " << e.what() << std::endl;
    return 1;
  }
}
