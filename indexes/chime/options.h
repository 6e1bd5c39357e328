// CHIME options: geometry, cache and hotspot budgets, and the typed switches of its factor
// analysis.
#pragma once

#include <cstdint>

#include "indexes/common/root_slots.h"

namespace dmrt::chime {

struct Options {
  uint32_t value_size = 8;                      // bytes per value (inline, zero-padded)
  uint64_t cache_bytes = uint64_t{70} << 20;    // internal-node cache per compute node
  uint32_t span = 64;                           // entries per hopscotch leaf
  uint32_t neighborhood = 8;                    // H: hopscotch neighborhood (<= 16)
  uint32_t internal_span = 64;                  // pivots per internal node
  uint64_t hotspot_bytes = uint64_t{30} << 20;  // hotspot buffer (16 B per entry)
  // Technique switches (paper §5.3 factor analysis). All on = CHIME; all off ~ Sherman-like
  // leaves read whole.
  bool hopscotch_leaf = true;        // off: every leaf access reads the whole leaf
  bool vacancy_piggyback = true;     // off: the vacancy bitmap costs a separate READ after locking
  bool metadata_replication = true;  // off: leaf metadata (nv, sibling) costs a separate READ
  bool speculative_read = true;      // hotness-aware speculative single-entry READ
  unsigned root_slot = root_slots::kChime;  // layout::root_slot on the first memory node
  // Test-only faults that prove the checkers can fail; compiled out without
  // DMRT_FAULT_INJECTION (indexes/common/faults.h). Never set them elsewhere.
  struct Faults {
    bool skip_bitmap_check = false;  // drop the level-3 (hop bitmap) validation
    bool ack_without_write = false;  // insert returns true without writing
  } faults;
};

}  // namespace dmrt::chime
