#include "dmrt/runtime/layout.h"

#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/messaging.h"

namespace dmrt::layout {

void format_region(std::byte* base, uint64_t bytes, NodeId node, NodeRole role,
                   const ClusterConfig& config) {
  const MailboxGeometry& g = config.mailbox;
  for (uint32_t m = 0; m < g.mailboxes; ++m) MailboxRing::format(base + mailbox_offset(g, m), g);
  local::store_word(base + kVersionOffset, kVersion);
  local::store_word(base + kRegionBytesOffset, bytes);
  local::store_word(base + kBumpOffset, heap_start(g));
  local::store_word(base + kNodeInfoOffset,
                    uint64_t{node} | (uint64_t{static_cast<uint8_t>(role)} << 16));
  local::store_word(base + kNodeCountOffset, config.size());
  local::store_word(base + kMailboxGeomOffset, uint64_t{g.mailboxes} | (uint64_t{g.slots} << 32));
  local::store_word(base + kSlotBytesOffset, g.slot_bytes);
  local::store_word(base + kDeviceMemoryBytesOffset, config.nodes.at(node).device_memory_bytes);
  local::store_word(base + kDeviceBumpOffset, 0);
  local::store_word(base + kMagicOffset, kMagic);
}

}  // namespace dmrt::layout
