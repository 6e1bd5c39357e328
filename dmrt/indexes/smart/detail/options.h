// SMART options: key and value geometry, cache budget, and the typed switches of the paper's
// factor analysis (read delegation, write combining, the compute-side cache).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>

#include "dmrt/indexes/common/flush_points.h"
#include "dmrt/indexes/common/root_slots.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt::smart {

// Where a port to non-coherent memory flushes (FlushHint; docs/cxl-porting.md, "Coherence"). Slots
// and a leaf's status (its lock) change by CAS and a release's lock word, which the device
// executes.
enum class FlushPoint : uint8_t {
  kNodeInvalidate,    // inner-node READs (on a cache miss) and slot re-READs see memory
  kLeafInvalidate,    // leaf READs see memory (a cached slot is a copy; leaves are recycled)
  kLeafWriteBack,     // an in-place leaf update is written back before its status unlocks it
  kPublishWriteBack,  // a new leaf or node is written back before the slot CAS that publishes it
};
inline constexpr FlushPoint kFlushPoints[] = {
    FlushPoint::kNodeInvalidate, FlushPoint::kLeafInvalidate, FlushPoint::kLeafWriteBack,
    FlushPoint::kPublishWriteBack};
constexpr std::string_view flush_point_name(FlushPoint p) {
  switch (p) {
    case FlushPoint::kNodeInvalidate:
      return "node_invalidate";
    case FlushPoint::kLeafInvalidate:
      return "leaf_invalidate";
    case FlushPoint::kLeafWriteBack:
      return "leaf_write_back";
    case FlushPoint::kPublishWriteBack:
      return "publish_write_back";
  }
  return "?";
}

struct Options {
  uint32_t value_size = 8;  // bytes per value (stored inline in the leaf, zero-padded)
  // The longest key, in bytes; 8 keeps integer keys (8 big-endian bytes, byte order = key order).
  // Larger: byte keys of 1..key_size bytes, stored in the leaf with their length (layout.h).
  uint32_t key_size = 8;
  uint64_t cache_bytes = uint64_t{64} << 20;  // compute-side inner-node cache per compute node
  // The compute-side cache of inner nodes (§4.3): a traversal starts at the deepest cached node
  // whose path matches the key. off: every traversal starts at the root.
  bool cache = true;
  bool read_delegation = true;  // concurrent searches of one key on a compute node share one read
  bool write_combining = true;  // concurrent updates of one key on a compute node share one write
  // Adaptive node types 4/16/48/256 (§4.1): a node is read with as many slots as its type holds.
  // off: every inner node is a Node256 (the paper's "w/o ART" point).
  bool adaptive_nodes = true;
  // The artifact writes a new leaf (or node) and CASes its parent slot as two round trips; on:
  // both go in one doorbell batch (RC ordering keeps the write first), one round trip less per
  // insert.
  bool batch_write_cas = false;
  // A scan starts at the deepest cached node on its start key's path, and after that node's
  // subtree at the cached node of the next path (the artifact's range query starts from its
  // cache). off: every scan walks from the root (a chain of prefix nodes each time).
  bool scan_from_cache = true;
  // Out-of-place leaf updates (read-copy-update; CHIME's SMART-RCU of its Fig. 13, for
  // variable-length items): an update marks the old leaf obsolete by a CAS on its status word
  // (which also excludes other writers of the leaf), writes a new leaf with the new value and
  // CASes the parent slot to it (the two in one batch with batch_write_cas). Readers that meet an
  // obsolete leaf (a stale slot or cache entry) read the slot again. off: in place under the
  // leaf's lock (§4.2), deletes and inserts in place either way.
  bool rcu = false;
  unsigned root_slot = root_slots::kSmart;  // root word on the first memory node
  // Test-only faults; compiled out without DMRT_FAULT_INJECTION (dmrt/indexes/common/faults.h).
  // Never set them elsewhere.
  struct Faults {
    // Runs between an insert's look for its key byte in a cached node and its copy of that node's
    // slots: where another client of the compute node may learn a slot (tests/smart).
    std::function<void()> between_cached_look_and_copy;
    FlushPoints<FlushPoint> skip_flush;  // these flush points issue no hint (tests/coherence)
  } faults;

  static constexpr auto fields();
};

constexpr auto Options::fields() {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  return option_fields(
      option_switch("cache", &Options::cache,
                    "Compute-side cache of inner nodes (off: every traversal starts at the root)"),
      option_switch("read_delegation", &Options::read_delegation,
                    "Concurrent searches of one key on a compute node share one read"),
      option_switch("write_combining", &Options::write_combining,
                    "Concurrent updates of one key on a compute node share one write"),
      option_switch("adaptive_nodes", &Options::adaptive_nodes,
                    "Inner node types 4/16/48/256 read by their size (off: all Node256)"),
      option_switch("batch_write_cas", &Options::batch_write_cas,
                    "Write a new leaf/node and CAS its parent slot in one doorbell batch (the "
                    "artifact: two round trips)"),
      option_switch("rcu", &Options::rcu,
                    "Out-of-place leaf updates: write a new leaf and CAS the parent slot "
                    "(SMART-RCU; off: in place under the leaf lock)"),
      option_switch("scan_from_cache", &Options::scan_from_cache,
                    "A scan starts at the deepest cached node on its path (off: at the root)"),
      option_number("key_size", &Options::key_size,
                    "The longest key, in bytes (8: integer keys; bench: --key-size)", 8u,
                    static_cast<uint32_t>(kMaxKeyBytes))
          .no_flag(),
      option_number("cache_bytes", &Options::cache_bytes,
                    "Inner-node cache per compute node (bench: --cache-mb)", uint64_t{0}, kMax)
          .no_flag());
}

}  // namespace dmrt::smart
