// Cluster description: which nodes exist, their roles and region sizes; TOML file or embedded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/far_memory.h"
#include "dmrt/runtime/stats.h"

namespace dmrt {

struct NodeSpec {
  NodeRole role = NodeRole::kMemory;
  uint64_t region_bytes = 0;
  int numa_node = -1;   // -1: no placement (shm binds the region to this NUMA node when >= 0)
  std::string address;  // host:port of the node's bootstrap endpoint (verbs); empty in-process
  // Device memory (on-chip memory of the node's NIC; dmrt/runtime/address.h): 0 = none. Memory
  // nodes get kDefaultDeviceMemoryBytes unless the config says otherwise (TOML `device_memory`).
  uint64_t device_memory_bytes = 0;
  FarMemoryCost far;  // shm's far-memory model for this node (memory nodes only); none by default

  // 256 KiB: the on-chip memory of the ConnectX-5 NICs the Sherman paper keeps its locks in.
  static constexpr uint64_t kDefaultDeviceMemoryBytes = uint64_t{256} << 10;
  // On-chip memories are KiB to a few MiB; more is a typo (and would not fit a NIC).
  static constexpr uint64_t kMaxDeviceMemoryBytes = uint64_t{1} << 30;
  static uint64_t default_device_memory(NodeRole r) {
    return r == NodeRole::kMemory ? kDefaultDeviceMemoryBytes : 0;
  }
};

// Two-sided messaging geometry, identical on every node: mailbox 0 of a node is its service inbox,
// the others are reply boxes handed to clients of that node.
struct MailboxGeometry {
  uint32_t mailboxes = 512;   // one inbox + one reply box per client of the node
  uint32_t slots = 8;         // messages a mailbox can queue
  uint32_t slot_bytes = 512;  // per message, header included (2 MiB per node in all)

  // Limits that keep every size product exact (validate() refuses more).
  static constexpr uint32_t kMaxMailboxes = 1 << 16;
  static constexpr uint32_t kMaxSlots = 1 << 16;
  static constexpr uint32_t kMaxSlotBytes = 1 << 20;

  uint64_t bytes_per_mailbox() const;
  uint64_t total_bytes() const { return bytes_per_mailbox() * mailboxes; }
};

struct ClusterConfig {
  std::vector<NodeSpec> nodes;  // NodeId = index
  MailboxGeometry mailbox;
  // Top-level `secret_file`: a file holding the cluster secret the verbs bootstrap authenticates
  // with (relative to the cluster file's folder). Empty: none named.
  std::string secret_file;

  static constexpr size_t kMaxNodes = 65535;                     // node ids are 16 bits
  static constexpr uint64_t kMaxFileBytes = uint64_t{16} << 20;  // 65535 nodes with addresses fit

  // The zero-configuration cluster: memory nodes first, then compute nodes, all in one process.
  static ClusterConfig embedded(unsigned memory_nodes = 1, unsigned compute_nodes = 1,
                                uint64_t memory_bytes = uint64_t{4} << 30,
                                uint64_t compute_bytes = uint64_t{64} << 20);
  // Parses a cluster file; throws ConfigError naming the file, line and field on bad input.
  static ClusterConfig from_toml_file(const std::string& path);
  static ClusterConfig from_toml_string(const std::string& text, const std::string& origin = "");

  std::vector<NodeId> memory_nodes() const { return with_role(NodeRole::kMemory); }
  std::vector<NodeId> compute_nodes() const { return with_role(NodeRole::kCompute); }
  std::vector<NodeId> with_role(NodeRole r) const;
  NodeRole role(NodeId n) const { return nodes.at(n).role; }
  size_t size() const { return nodes.size(); }

  // Throws ConfigError when the description cannot work (no memory node, regions too small or
  // beyond 2^47 (the upper half of the offset space addresses device memory), device memory
  // that is not a multiple of 64 bytes or beyond kMaxDeviceMemoryBytes, mailbox geometry or node
  // count past the limits above).
  void validate() const;
  // Bytes written when every node's region is formatted (headers and mailboxes): what a process
  // hosting all nodes (shm, sim) touches before the first verb. Requires validate().
  uint64_t formatted_bytes() const;
};

std::string role_name(NodeRole r);

// Reads a size such as "4096", "64MiB" or "4GiB" (units B, K/KiB, M/MiB, G/GiB, T/TiB); throws
// ConfigError starting with `where` when it is not one, is zero or does not fit in 64 bits.
uint64_t parse_size_text(std::string_view text, const std::string& where);

}  // namespace dmrt
