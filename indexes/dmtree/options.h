// DMTree options: geometry, cache budget, and the typed switches of the paper's ablation (§5.4).
#pragma once

#include <cstdint>

#include "indexes/common/root_slots.h"

namespace dmrt::dmtree {

struct Options {
  uint32_t value_size = 8;                    // bytes per value (stored inline, zero-padded)
  uint64_t cache_bytes = uint64_t{64} << 20;  // private internal-node cache per compute node
  // Collaborative design (§3.2-3.3): fingerprint tables and leaf locks on compute nodes, owned by
  // consistent hashing, with cached copies. false = the FP-B+-tree baseline: the same tables and
  // lock words, all on the memory node.
  bool collaborative = true;
  bool cached_copies = true;  // keep copies of peers' tables locally (collaborative only)
  bool scan_filter = true;    // scans read only the slot range fingerprints mark used ("RDMA Opt")
  bool read_delegation = true;  // concurrent searches of one key on a compute node share one read
  bool write_combining = true;  // concurrent updates of one key on a compute node share one write
  uint32_t batch_limit = 8;     // followers per delegated/combined round; more run directly
  uint32_t leaf_span = 32;      // KV slots per leaf (= fingerprints per table), <= 64
  uint32_t internal_span = 32;  // pivots per internal node
  uint64_t max_leaves = 0;      // 0 = as many as the compute area / memory node allow
  unsigned vnodes = 64;         // virtual nodes per compute node on the ownership ring
  // Root slots on the first memory node (indexes/common/root_slots.h lists every index's).
  unsigned root_slot = root_slots::kDmtreeRoot;  // B+-tree root word
  unsigned meta_slot = root_slots::kDmtreeMeta;  // DMTree descriptor (leaf arena)
  // The collaborative service's membership word, table-id counter and descriptor.
  unsigned membership_slot = root_slots::kCollabMembership;
  unsigned counter_slot = root_slots::kCollabCounter;
  unsigned descriptor_slot = root_slots::kCollabDescriptor;
  uint32_t combiner_slots = 4096;
  // Test-only faults that prove the checkers can fail; compiled out without
  // DMRT_FAULT_INJECTION (indexes/common/faults.h). Never set them elsewhere.
  struct Faults {
    bool skip_negative_confirm = false;  // a search trusts a cached copy that lacks the fingerprint
    bool ack_without_write = false;      // insert returns true without writing the entry
  } faults;
};

}  // namespace dmrt::dmtree
