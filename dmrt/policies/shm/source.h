// Where a shm pool's memory comes from (memfds, /dev/shm names, or a device or file the user
// names) and the record of what served it, for reports.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dmrt::shm {

// A pool from a path is "only memory": a device-dax (/dev/daxX.Y: CXL or NVDIMM memory the
// kernel exposes whole), a PCI BAR (/sys/bus/pci/devices/D/resource2: ivshmem, which qemu guests
// share with each other and with the host), or a plain file (tmpfs, a disk, the file an ivshmem
// or a memory-backend-file maps). Its processes may run on different hosts (kernels), so it uses
// nothing but the mapped bytes: every node region and device memory lies in the one mapping
// (Pool::create), waits poll (Pool::polling_waits, dmrt/policies/shm/idle.h) and a compute node's
// claim names its host (dmrt/policies/shm/processes.h).
struct PoolSource {
  std::string path;    // empty: memfds (anonymous) or /dev/shm names (Pool::create(config, name))
  int numa_node = -1;  // >= 0: bind the whole mapping to this NUMA node (mbind) at creation

  // "NAME" is a /dev/shm pool, anything with a '/' a path (a /dev/shm name cannot hold one):
  // how --pool and --attach read their argument.
  static bool is_path(const std::string& name_or_path) {
    return name_or_path.find('/') != std::string::npos;
  }
};

// Which device or file, NUMA node and kernel path served a pool (Pool::provenance; JSON in
// dmrt/policies/shm/provenance_json.h).
struct PoolProvenance {
  // "memfd" (anonymous, this process's), "shm" (/dev/shm names), "devdax", "pci-bar", "file".
  std::string kind;
  std::string path;           // as named; /dev/shm/dmrt.NAME.* for "shm"; "" for "memfd"
  std::string device;         // the sysfs device behind the path (realpath); "" for none
  std::string kernel_path;    // one line: how the kernel serves the memory
  std::string filesystem;     // a file's filesystem type (tmpfs, ext4, ...); "" otherwise
  uint64_t source_bytes = 0;  // what the device or file has (sysfs size, fstat), 0 for memfd/shm
  uint64_t pool_bytes = 0;    // what the pool's regions and device memory take of it
  int device_numa_node = -1;  // the node the kernel gives the device (dax target_node, PCI
                              // numa_node); -1 unknown or none
  int numa_node = -1;         // the binding asked for (PoolSource::numa_node); -1 none
  bool numa_bound = false;    // an mbind was made (of the mapping or of a node's region)
  std::string waits;          // "futex" (one kernel) or "polling" (across hosts)
  // Where the pool's pages are (move_pages over a sample of every region): NUMA node -> pages.
  std::vector<std::pair<int, uint64_t>> pages_by_numa_node;
  uint64_t pages_sampled = 0, pages_absent = 0;
};

}  // namespace dmrt::shm
