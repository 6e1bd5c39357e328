// Command-line flags for a shm pool on a device or file (CLI11), for dmrt-bench.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "dmrt/policies/shm/source.h"

namespace dmrt::shm {

// Registers --shm-pool PATH (the pool this process creates lies on a device-dax, a PCI BAR or a
// file: dmrt/policies/shm/source.h) and --shm-pool-numa-node N (bind that pool's mapping to NUMA
// node N, e.g. a CPU-less node of CXL memory), writing into `source` (which must outlive parsing).
// A process that attaches names the pool by path where it names it by name (a '/' makes a path:
// PoolSource::is_path); the binding is its creator's, so an attaching process refuses it.
inline void add_cli_flags(CLI::App& app, PoolSource& source,
                          const std::string& group = "shm pool") {
  auto* path = app.add_option("--shm-pool", source.path,
                              "shm: make the pool on this device or file: /dev/daxX.Y, "
                              "/sys/bus/pci/devices/D/resource2 (ivshmem), or a file (made if "
                              "missing); its waits poll, so processes on other hosts can share it")
                   ->group(group);
  app.add_option("--shm-pool-numa-node", source.numa_node,
                 "shm: bind the --shm-pool mapping to this NUMA node (mbind; a file's pages: "
                 "e.g. a CPU-less node of CXL memory onlined as system RAM)")
      ->check(CLI::Range(0, 1023))
      ->needs(path)
      ->group(group);
}

}  // namespace dmrt::shm
