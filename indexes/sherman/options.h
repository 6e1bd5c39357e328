// Sherman options: geometry, cache budget and the typed technique switches.
#pragma once

#include <cstdint>

#include "indexes/common/root_slots.h"

namespace dmrt::sherman {

struct Options {
  uint32_t value_size = 8;                     // bytes per value (stored inline, zero-padded)
  uint64_t cache_bytes = uint64_t{100} << 20;  // internal-node cache budget per compute node
  uint32_t leaf_span = 64;                     // entries per leaf
  uint32_t internal_span = 64;                 // pivots per internal node
  // Technique switches (Sherman's factor analysis).
  bool sorted_leaves = false;    // false: unsorted leaves, an insert writes one entry
  bool local_lock_table = true;  // hierarchical lock: local queue + remote lock hand-over
  uint32_t handover_max = 8;     // consecutive local hand-overs before the lock is released
  bool write_combining = true;   // write-back and unlock in one batch (one round trip)
  unsigned root_slot = root_slots::kSherman;  // layout::root_slot on the first memory node
  uint32_t lock_table_slots = 4096;
  // Test-only faults that prove the checkers can fail; compiled out without
  // DMRT_FAULT_INJECTION (indexes/common/faults.h). Never set them elsewhere.
  struct Faults {
    bool skip_validation = false;    // accept torn leaf reads
    bool ack_without_write = false;  // insert returns true without writing the entry
  } faults;
};

}  // namespace dmrt::sherman
