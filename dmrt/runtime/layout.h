// Layout of every node region: header words, root slots, mailboxes, then the allocatable heap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/cluster.h"

namespace dmrt::layout {

inline constexpr uint64_t kMagic = 0x31474552544d5244ull;  // "DMRTREG1"
inline constexpr uint64_t kVersion = 1;

// Word offsets inside the first page of a region.
inline constexpr uint64_t kMagicOffset = 0;
inline constexpr uint64_t kVersionOffset = 8;
inline constexpr uint64_t kRegionBytesOffset = 16;
inline constexpr uint64_t kBumpOffset = 24;       // next free heap byte; advanced by FAA
inline constexpr uint64_t kNodeInfoOffset = 32;   // node id (low 16 bits) | role << 16
inline constexpr uint64_t kNodeCountOffset = 40;  // nodes in the cluster (for attaching processes)
inline constexpr uint64_t kMailboxGeomOffset = 48;  // mailboxes | slots << 32
inline constexpr uint64_t kSlotBytesOffset = 56;
inline constexpr uint64_t kHeapStartOffset = 64;
// Services the node's own process runs (one bit each, ServiceInfo::bit in
// dmrt/runtime/service_registry.h), set by the node program (dmrt-node --service) so that compute
// nodes can tell whether a service is there. The top bit says that the node program has started all
// of its services: a compute node that connects while they are still starting must wait for it
// (dmrt/runtime/services_word.h) instead of reading a half-written word.
inline constexpr uint64_t kServicesOffset = 72;
inline constexpr uint64_t kServicesReady = uint64_t{1} << 63;
// Bit 62: the node's process answers clock requests on mailbox 0 (dmrt/runtime/clock_messages.h),
// so that processes on other hosts that share only a pool with it can put their histories on its
// clock.
inline constexpr uint64_t kServicesClock = uint64_t{1} << 62;
// The node's device memory (dmrt/runtime/address.h): its size, and the next free byte of it,
// advanced by FAA (Client::alloc_device_memory). The allocator's words live here, in host memory,
// so that all of the device memory is usable (it is small) and formatting it is only zeroing it.
inline constexpr uint64_t kDeviceMemoryBytesOffset = 80;
inline constexpr uint64_t kDeviceBumpOffset = 88;
// Processes that share one shm pool (dmrt/policies/shm/processes.h): on every node, the pid of the
// process that runs it as a compute node (0: none); on node 0, a block of words that the compute
// processes of one run coordinate through (who creates the index, client ids, a barrier).
// Formatting leaves them zero.
inline constexpr uint64_t kClaimOffset = 96;
inline constexpr uint64_t kGroupOffset = 1024;
inline constexpr uint64_t kGroupWords = 128;  // up to the idle bells (bench/driver/group.h)
// The heartbeat of the process serving the node (dmrt-node): a counter bumped every 100 ms while
// it serves, kHeartbeatStopped once it stopped, 0 when no process of its own serves it. Compute
// processes watch it to end with an error naming a lost memory node (bench/driver/group.h).
inline constexpr uint64_t kHeartbeatOffset = 104;
inline constexpr uint64_t kHeartbeatStopped = ~uint64_t{0};
// shm: a compute process asks the node's serving process to stop (dmrt-bench --stop-nodes once
// every compute process is done); nonzero = stop. On verbs the bootstrap's STOP does this.
inline constexpr uint64_t kStopRequestOffset = 112;
// Well-known words an index uses to find its roots (directory, tree root...). Index code picks
// its slot numbers; slot k lives at kRootSlotsOffset + 8k on a chosen node.
inline constexpr uint64_t kRootSlotsOffset = 128;
inline constexpr uint64_t kRootSlots = 64;
// shm only, on node 0: the words threads whose fibers all wait sleep on until a message is sent
// (shm::IdleBell, dmrt/policies/shm/idle.h): 32 bells of a cache line each, up to the header's end.
// Formatting leaves them zero.
inline constexpr uint64_t kIdleBellOffset = 2048;
inline constexpr uint64_t kHeaderBytes = 4096;
inline constexpr uint64_t kMailboxesOffset = kHeaderBytes;

inline GlobalAddress bump_word(NodeId n) {
  return {n, kBumpOffset};
}
inline GlobalAddress device_memory_bytes_word(NodeId n) {
  return {n, kDeviceMemoryBytesOffset};
}
inline GlobalAddress device_bump_word(NodeId n) {
  return {n, kDeviceBumpOffset};
}
inline GlobalAddress services_word(NodeId n) {
  return {n, kServicesOffset};
}
inline GlobalAddress root_slot(NodeId n, unsigned k) {
  return {n, kRootSlotsOffset + 8ull * k};
}

// First allocatable byte, page aligned, after the mailboxes.
inline uint64_t heap_start(const MailboxGeometry& g) {
  return (kMailboxesOffset + g.total_bytes() + 4095) & ~uint64_t{4095};
}
inline uint64_t mailbox_offset(const MailboxGeometry& g, uint32_t mailbox) {
  return kMailboxesOffset + g.bytes_per_mailbox() * mailbox;
}

// Writes a fresh region's header, mailboxes and bump words (the device memory itself starts
// zeroed; each transport creates it so). Every transport that creates a region
// (shm pools, the verbs memory-node program) formats it here, so all agree byte for byte. The magic
// word is written last: whoever sees it sees a complete header.
void format_region(std::byte* base, uint64_t bytes, NodeId node, NodeRole role,
                   const ClusterConfig& config);

}  // namespace dmrt::layout
