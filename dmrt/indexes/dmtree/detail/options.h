// DMTree options: geometry, cache budget, and the typed switches of the paper's ablation (§5.4).
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "dmrt/indexes/common/flush_points.h"
#include "dmrt/indexes/common/root_slots.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt::dmtree {

// Where a port to non-coherent memory flushes (FlushHint; docs/cxl-porting.md, "Coherence"). A
// fingerprint table's lock (its tail word) changes by CAS and a release's lock word, which the
// device executes. A table lives on its owner compute node, whose own clients reach it through
// that host's cache: every other host's READ must invalidate, and every WRITE (the owner's
// included) must be written back. A node's cached copies of peers' tables are its own and need
// neither. The root word changes by CAS when the tree grows.
enum class FlushPoint : uint8_t {
  kLeafInvalidate,   // leaf READs (matched entries, whole leaves, scan ranges) see memory
  kLeafWriteBack,    // entry and leaf WRITEs are written back before the table WRITE that unlocks
  kTableInvalidate,  // primary fingerprint-table READs (locking and not) see the owner's memory
  kTableWriteBack,   // primary table WRITEs are written back (before their lock word lands)
  kRootInvalidate,   // root word READs see a grown root (btree::CoreFlushes)
  kInternalInvalidate,    // internal-node READs, locked or not, see memory
  kInternalWriteBack,     // new and rewritten internal nodes are written back (before the unlock)
  kMembershipInvalidate,  // READs of the collaborative membership word (CAS) and its log entries
};
inline constexpr FlushPoint kFlushPoints[] = {
    FlushPoint::kLeafInvalidate,    FlushPoint::kLeafWriteBack,
    FlushPoint::kTableInvalidate,   FlushPoint::kTableWriteBack,
    FlushPoint::kRootInvalidate,    FlushPoint::kInternalInvalidate,
    FlushPoint::kInternalWriteBack, FlushPoint::kMembershipInvalidate};
constexpr std::string_view flush_point_name(FlushPoint p) {
  switch (p) {
    case FlushPoint::kLeafInvalidate:
      return "leaf_invalidate";
    case FlushPoint::kLeafWriteBack:
      return "leaf_write_back";
    case FlushPoint::kTableInvalidate:
      return "table_invalidate";
    case FlushPoint::kTableWriteBack:
      return "table_write_back";
    case FlushPoint::kRootInvalidate:
      return "root_invalidate";
    case FlushPoint::kInternalInvalidate:
      return "internal_invalidate";
    case FlushPoint::kInternalWriteBack:
      return "internal_write_back";
    case FlushPoint::kMembershipInvalidate:
      return "membership_invalidate";
  }
  return "?";
}

struct Options {
  uint32_t value_size = 8;  // bytes per value (stored inline, zero-padded)
  // The longest key, in bytes; 8 keeps integer keys. Longer: byte-string keys of 1..key_size
  // bytes, each stored inline in its leaf entry's fixed key slot
  // (dmrt/indexes/common/btree_keys.h).
  uint32_t key_size = 8;
  uint64_t cache_bytes = uint64_t{64} << 20;  // private internal-node cache per compute node
  // The private cache holds bottom-level internal nodes only, indexed locally by key (§3.2.1); off:
  // every internal level, as Sherman's and CHIME's caches do.
  bool bottom_level_cache = true;
  // Bottom-level internal entries carry each leaf's version ID and fingerprint-table pointer; the
  // version is checked against the table a search or write reads, and a stale cached node is
  // refreshed (§3.2.2). off: the entries hold the leaf pointer only, and fence keys alone (B-link
  // moves) keep the cache coherent.
  bool entry_versions = true;
  // A delete that empties a leaf merges it with its neighbour under the same parent and removes
  // its internal entry (§4.2). off: empty leaves stay (scans skip them).
  bool leaf_merge = true;
  // Collaborative design (§3.2-3.3): fingerprint tables and leaf locks on compute nodes, owned by
  // consistent hashing, with cached copies. false = the FP-B+-tree baseline: the same tables and
  // lock words, all on the memory node.
  bool collaborative = true;
  bool cached_copies = true;  // keep copies of peers' tables locally (collaborative only)
  bool scan_filter = true;    // scans read only the slot range fingerprints mark used ("RDMA Opt")
  bool read_delegation = true;  // concurrent searches of one key on a compute node share one read
  bool write_combining = true;  // concurrent updates of one key on a compute node share one write
  uint32_t batch_limit = 8;     // followers per delegated round; more run directly
  // The limit bounds write-combining rounds too. The authors' code bounds only read delegation
  // (MAX_HOCL_HANDOVER): writes combine without a bound, which is the default here.
  bool batch_limit_writes = false;
  // Writes of one key on a compute node queue on a local ticket lock (hashed by key) before they
  // take the leaf's lock, as the authors' code does for both the batched and the direct ones:
  // the operations past batch_limit then wait locally instead of all CASing the owner's lock word
  // (under zipfian 0.99 at 6 x 64 clients, 14 round trips per update instead of 2.8).
  bool local_key_lock = true;
  uint32_t leaf_span = 32;      // KV slots per leaf (= fingerprints per table), <= 64
  uint32_t internal_span = 32;  // pivots per internal node
  uint64_t max_leaves = 0;      // 0 = as many as the compute area / memory node allow
  unsigned vnodes = 64;         // virtual nodes per compute node on the ownership ring
  // Root slots on the first memory node (dmrt/indexes/common/root_slots.h lists every index's).
  unsigned root_slot = root_slots::kDmtreeRoot;  // B+-tree root word
  unsigned meta_slot = root_slots::kDmtreeMeta;  // DMTree descriptor (leaf arena)
  // The collaborative service's membership word, table-id counter and descriptor.
  unsigned membership_slot = root_slots::kCollabMembership;
  unsigned counter_slot = root_slots::kCollabCounter;
  unsigned descriptor_slot = root_slots::kCollabDescriptor;
  uint32_t combiner_slots = 4096;
  // Test-only faults that prove the checkers can fail; compiled out without
  // DMRT_FAULT_INJECTION (dmrt/indexes/common/faults.h). Never set them elsewhere.
  struct Faults {
    bool skip_negative_confirm = false;  // a search trusts a cached copy that lacks the fingerprint
    bool ack_without_write = false;      // insert returns true without writing the entry
    FlushPoints<FlushPoint> skip_flush;  // these flush points issue no hint (tests/coherence)
  } faults;

  // The fields a user sets (bench flags --dmtree-*, JSON, TOML), each declared once; the bench
  // adds --dmtree-ablation and --dmtree-max-leaves on top (bench/indexes/dmtree.cpp).
  static constexpr auto fields();
};

constexpr auto Options::fields() {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  return option_fields(
      option_switch("collaborative", &Options::collaborative,
                    "Fingerprint tables and leaf locks on the compute nodes (off: the FP-B+-tree "
                    "baseline, all on the memory node)"),
      option_switch("cached_copies", &Options::cached_copies,
                    "Keep copies of peers' fingerprint tables (collaborative only)"),
      option_switch("scan_filter", &Options::scan_filter,
                    "Scans read only the slot range the fingerprints mark used"),
      option_switch("read_delegation", &Options::read_delegation,
                    "Concurrent searches of one key on a compute node share one read"),
      option_switch("write_combining", &Options::write_combining,
                    "Concurrent updates of one key on a compute node share one write"),
      option_number("batch_limit", &Options::batch_limit,
                    "Followers per delegated round (and combined round with batch_limit_writes)",
                    1u, 1u << 16),
      option_switch("batch_limit_writes", &Options::batch_limit_writes,
                    "batch_limit bounds write-combining rounds too (the authors' code bounds only "
                    "read delegation)"),
      option_switch("local_key_lock", &Options::local_key_lock,
                    "Writes of one key on a compute node queue on a local ticket lock before "
                    "taking the leaf lock (the authors' code; off: past batch_limit they CAS it "
                    "directly)"),
      option_number("span", &Options::leaf_span, "KV slots per leaf (= fingerprints per table)", 4u,
                    64u),
      option_number("internal_span", &Options::internal_span, "Pivots per internal node", 4u,
                    1024u),
      option_number("cache_bytes", &Options::cache_bytes,
                    "Internal-node cache per compute node (bench: --cache-mb)", uint64_t{0}, kMax)
          .no_flag(),
      option_switch("bottom_level_cache", &Options::bottom_level_cache,
                    "The internal-node cache holds the bottom level only, as the paper's does "
                    "(off: every level)"),
      option_switch("entry_versions", &Options::entry_versions,
                    "Bottom-level internal entries carry the leaf's version ID and fingerprint-"
                    "table pointer, checked against the table (off: fence keys alone)"),
      option_switch("leaf_merge", &Options::leaf_merge,
                    "A delete that empties a leaf merges it with its neighbour (off: empty "
                    "leaves stay)"),
      option_number("vnodes", &Options::vnodes,
                    "Virtual nodes per compute node on the ownership ring", 1u, 4096u),
      option_number("combiner_slots", &Options::combiner_slots,
                    "Delegation/combining slots per compute node", 1u, 1u << 24),
      option_number("max_leaves", &Options::max_leaves,
                    "Leaf arena capacity (0: as many as the memory node allows)", uint64_t{0},
                    uint64_t{1} << 40)
          .no_flag());
}

}  // namespace dmrt::dmtree
