// Command-line flags for the sim transport (CLI11), for dmrt-bench and the sim tools.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "dmrt/policies/sim/options.h"

namespace dmrt::sim {

// Registers --compute-nodes, --clients-per-node, --memory-nodes, --preset and the cost-model
// flags onto `app`, writing into `opts` (which must outlive parsing). A flag given explicitly
// always wins over --preset, whatever their order on the command line.
// `with_nodes` = false leaves --compute-nodes and --memory-nodes to a host program that has its
// own (dmrt-bench), which then sets opts.compute_nodes and opts.memory_nodes itself.
inline void add_cli_flags(CLI::App& app, Options& opts, const std::string& group = "Simulator",
                          bool with_nodes = true) {
  auto overrides = std::make_shared<std::vector<std::function<void(Options&)>>>();
  // A cost flag: sets the field now and again after a preset is applied.
  auto cost = [&app, &opts, overrides, &group](const std::string& name, auto member,
                                               const std::string& help) {
    using T = std::remove_reference_t<decltype(opts.*member)>;
    CLI::Option* flag = app.add_option_function<T>(
                               name,
                               [&opts, overrides, member](const T& v) {
                                 opts.*member = v;
                                 overrides->push_back([member, v](Options& o) { o.*member = v; });
                               },
                               help)
                            ->group(group);
    // A field narrower than 64 bits states its range, so that a value past it is refused with
    // the flag's range (tools' strict numbers), not CLI11's "Could not convert"; the rates (the
    // double fields) theirs, so that -5 is refused at once (Options::validate refuses 0 too).
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && sizeof(T) < 8)
      flag->check(CLI::Range(std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
    else if constexpr (std::is_floating_point_v<T>)
      flag->check(CLI::Range(T{0}, T{1e6}));
  };
  // Node ids are 16 bits: compute and memory nodes together are at most 65535 (Options::validate).
  constexpr unsigned kMaxNodes = 65534;
  if (with_nodes)
    app.add_option("--compute-nodes", opts.compute_nodes, "sim: compute nodes")
        ->check(CLI::Range(1u, kMaxNodes))
        ->capture_default_str()
        ->group(group);
  app.add_option("--clients-per-node", opts.clients_per_node,
                 "sim: simulated clients (fibers) per compute node")
      ->check(CLI::Range(1u, std::numeric_limits<unsigned>::max()))
      ->capture_default_str()
      ->group(group);
  if (with_nodes)
    app.add_option("--memory-nodes", opts.memory_nodes, "sim: memory nodes")
        ->check(CLI::Range(1u, kMaxNodes))
        ->capture_default_str()
        ->group(group);
  app.add_option_function<std::string>(
         "--preset",
         [&opts, overrides](const std::string& name) {
           opts.apply_preset(name);
           for (auto& f : *overrides) f(opts);
         },
         "sim: cost-model preset (rdma-cx6: 100 Gb/s ConnectX-6 class RDMA; cxl: CXL memory "
         "expander; cxl-pool: a switched pool several hosts share); explicit cost flags "
         "override it")
      ->check(CLI::IsMember(Options::preset_names()))
      ->group(group);
  cost("--nic-mops", &Options::nic_mops, "sim: per-NIC message rate limit, million verbs/s");
  cost("--nic-gbps", &Options::nic_gbps, "sim: per-NIC line rate per direction, Gbit/s");
  cost("--memory-nic-gbps", &Options::memory_nic_gbps,
       "sim: a memory node's line rate where it differs (0: --nic-gbps), Gbit/s");
  cost("--header-bytes", &Options::header_bytes, "sim: wire header bytes per verb and direction");
  cost("--latency-ns", &Options::latency_ns, "sim: one-way NIC-to-NIC latency, ns");
  cost("--cpu-ns", &Options::cpu_ns, "sim: client CPU per execute() (post + poll + handle), ns");
  cost("--cpu-per-verb-ns", &Options::cpu_per_verb_ns,
       "sim: extra client CPU per additional verb in one execute(), ns");
  cost("--poll-ns", &Options::poll_ns, "sim: virtual time one pause()/poll costs, ns");
  cost("--pcie-rtt-ns", &Options::pcie_rtt_ns,
       "sim: PCIe round trip a READ or atomic on host memory pays at the target NIC (part of "
       "--latency-ns) and one on device memory skips, ns");
  cost("--serialize-atomics", &Options::serialize_atomics,
       "sim: atomics on one host-memory word wait for each other's PCIe read-modify-write "
       "(--pcie-rtt-ns each; not on device memory)");
  cost("--native-masked-cas", &Options::native_masked_cas,
       "sim: masked CAS is one native verb (true) or a reported CAS loop (false)");
  cost("--saturation-wait-ns", &Options::saturation_wait_ns,
       "sim: queueing delay at which a NIC resource counts as saturated, ns");
  cost("--service-access-ns", &Options::service_access_ns,
       "sim: memory-node service CPU per execute() of local verbs, ns");
  cost("--service-gbps", &Options::service_gbps,
       "sim: memory-node service copy bandwidth for local verb payloads, Gbit/s");
  cost("--service-msg-ns", &Options::service_msg_ns,
       "sim: memory-node service CPU per message taken from a mailbox, ns");
  cost("--service-idle-ns", &Options::service_idle_ns,
       "sim: longest an idle memory-node service sleeps without a change to its memory, ns");
  // The coherence model (docs/sim.md, "Coherence model"): no preset sets these.
  app.add_option_function<std::string>(
         "--sim-coherence",
         [&opts](const std::string& name) { opts.coherence = parse_coherence(name); },
         "sim: coherence of pooled memory across hosts (coherent: as RDMA, the default; none: "
         "each host caches lines and honours the verbs' flush hints; partial: none, but the first "
         "--sim-coherent-bytes of each node's device memory are coherent)")
      ->check(CLI::IsMember({"coherent", "none", "partial"}))
      ->group(group);
  app.add_option("--sim-coherent-bytes", opts.coherent_bytes,
                 "sim: coherent bytes at the start of each node's device memory "
                 "(--sim-coherence partial)")
      ->capture_default_str()
      ->group(group);
  app.add_option("--sim-cache-bytes", opts.cache_bytes,
                 "sim: each host's cache under --sim-coherence none/partial, bytes")
      ->capture_default_str()
      ->group(group);
  app.add_option("--sim-flush-line-ns", opts.flush_line_ns,
                 "sim: client CPU per line a flush hint invalidates or writes back, ns")
      ->capture_default_str()
      ->group(group);
  app.add_option("--sim-memory-bytes", opts.memory_bytes, "sim: region bytes per memory node")
      ->capture_default_str()
      ->group(group);
}

}  // namespace dmrt::sim
