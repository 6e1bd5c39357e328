// Command-line flags for the verbs transport (CLI11): device, port, GID, MTU, timeouts, masked CAS.
#pragma once

#include <CLI/CLI.hpp>

#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "dmrt/policies/verbs/device.h"

namespace dmrt::verbs {

// Registers the device and queue-pair flags onto `app`, writing into `opts` (which must outlive
// parsing). Nothing is chosen here: every default means "ask the device" (see verbs::Options).
inline void add_cli_flags(CLI::App& app, Options& opts, const std::string& group = "RDMA (verbs)") {
  app.add_option(
         "--device", opts.device,
         "verbs: ibv device name (e.g. mlx5_1, rxe0); default: the first with an ACTIVE port")
      ->group(group);
  // Port numbers and GID indexes are 8 bits in the verbs API (ibv_port_attr, ibv_global_route).
  app.add_option("--ib-port", opts.port, "verbs: device port; 0 = the first ACTIVE one")
      ->check(CLI::Range(0, 255))
      ->group(group);
  app.add_option("--gid", opts.gid_index,
                 "verbs: GID index; -1 = RoCE v2 IPv4-mapped if any, else RoCE v2, else 0")
      ->check(CLI::Range(-1, 255))
      ->group(group);
  app.add_option("--mtu", opts.mtu, "verbs: path MTU in bytes; 0 = the port's active MTU")
      ->check(CLI::IsMember({0, 256, 512, 1024, 2048, 4096}))
      ->group(group);
  app.add_option("--timeout-exp", opts.ack_timeout,
                 "verbs: local ACK timeout exponent (4.096 us x 2^N)")
      ->check(CLI::Range(0, 31))
      ->default_str(std::to_string(+opts.ack_timeout))  // a uint8_t, shown as a number
      ->group(group);
  app.add_option("--retry", opts.retry_count, "verbs: transport retries before an error completion")
      ->check(CLI::Range(0, 7))
      ->default_str(std::to_string(+opts.retry_count))
      ->group(group);
  app.add_option("--connect-timeout-ms", opts.connect_timeout_ms,
                 "verbs: how long to wait for peers that have not come up (bootstrap, barrier)")
      ->check(CLI::Range(uint32_t{0}, std::numeric_limits<uint32_t>::max()))
      ->capture_default_str()
      ->group(group);
  app.add_option("--qp-depth", opts.qp_depth, "verbs: send queue entries per queue pair")
      ->check(CLI::Range(16, 16384))
      ->capture_default_str()
      ->group(group);
  // By name both ways: --help and --write-config show "auto", never the enum's byte.
  static constexpr std::pair<const char*, MaskedCasMode> kModes[] = {
      {"auto", MaskedCasMode::kAuto},
      {"emulate", MaskedCasMode::kEmulate},
      {"native", MaskedCasMode::kNative}};
  std::string shown;
  for (const auto& [name, mode] : kModes)
    if (mode == opts.masked_cas) shown = name;
  app.add_option_function<std::string>(
         "--masked-cas",
         [&opts](const std::string& given) {
           std::string s = given;
           for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
           for (const auto& [name, mode] : kModes)
             if (s == name) {
               opts.masked_cas = mode;
               return;
             }
           throw CLI::ValidationError("--masked-cas", "must be one of auto | emulate | native");
         },
         "verbs: auto (native when an mlx5 device passes the start-up probe, else the CAS "
         "loop), emulate, native (refuse to start without it)")
      ->type_name("auto|emulate|native")
      ->default_str(shown)
      ->group(group);
  app.add_flag("--allow-unauthenticated", opts.allow_unauthenticated,
               "verbs: without a cluster secret, serve the bootstrap on the configured address "
               "anyway instead of loopback only (anyone reaching it can then stop the node and "
               "read or write its region; see docs/security.md)")
      ->group(group);
  app.add_flag("--hugepages", opts.hugepages, "verbs: back the local region with huge pages")
      ->group(group);
}

}  // namespace dmrt::verbs
