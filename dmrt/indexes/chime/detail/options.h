// CHIME options: geometry, cache and hotspot budgets, and the typed switches of its factor
// analysis.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "dmrt/indexes/common/flush_points.h"
#include "dmrt/indexes/common/root_slots.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt::chime {

// Leaf synchronization, levels 1 and 2 of §4.1 (level 3, the hop-bitmap check, is in both).
//   versions: the paper's 1-byte two-level versions (4-bit NV, 4-bit EV) in every entry, replica
//             and cache line; sound where the transport is line-atomic (dmrt/runtime/transport.h).
//   checksum: an 8-byte meta word per entry and replica with a 32-bit checksum and nv; sound
//             where only 8-byte words are atomic (dmrt/runtime/sealed_object.h).
//   auto:     versions where the transport is line-atomic and neighborhood <= 14, else checksum.
enum class Sync : uint8_t { kAuto, kVersions, kChecksum };
inline constexpr std::string_view kSyncNames[] = {"auto", "versions", "checksum"};

// Where a port to non-coherent memory flushes (FlushHint; docs/cxl-porting.md, "Coherence"). The
// leaf lock changes by (masked) CAS and a release's lock word, which the device executes; so does
// the root word when the tree grows. A split's new leaf is a leaf WRITE.
enum class FlushPoint : uint8_t {
  kLeafInvalidate,      // neighbourhood, speculative and whole-leaf READs see memory
  kLeafWriteBack,       // entries and replicas are written back before the unlock of their batch
  kRootInvalidate,      // root word READs see a grown root (btree::CoreFlushes)
  kInternalInvalidate,  // internal-node READs, locked or not, see memory
  kInternalWriteBack,   // new and rewritten internal nodes are written back (before the unlock)
};
inline constexpr FlushPoint kFlushPoints[] = {
    FlushPoint::kLeafInvalidate, FlushPoint::kLeafWriteBack, FlushPoint::kRootInvalidate,
    FlushPoint::kInternalInvalidate, FlushPoint::kInternalWriteBack};
constexpr std::string_view flush_point_name(FlushPoint p) {
  switch (p) {
    case FlushPoint::kLeafInvalidate:
      return "leaf_invalidate";
    case FlushPoint::kLeafWriteBack:
      return "leaf_write_back";
    case FlushPoint::kRootInvalidate:
      return "root_invalidate";
    case FlushPoint::kInternalInvalidate:
      return "internal_invalidate";
    case FlushPoint::kInternalWriteBack:
      return "internal_write_back";
  }
  return "?";
}

struct Options {
  uint32_t value_size = 8;  // bytes per value (inline, zero-padded)
  uint32_t key_size = 8;    // the longest key, in bytes; 8 keeps integer keys (inline in entries)
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
  // Scans read the leaves the cached level-1 node names in parallel, one round trip per batch
  // (§3.9: "fetches ... leaf nodes (1 RTT) via parallel READs"); off: one leaf per round trip
  // along the sibling chain.
  bool parallel_scan = true;
  // Scans read, of a leaf that their key range covers in part, only the neighborhoods of the
  // integer keys it covers there (§4.4: "analyze neighborhood intersections of target keys and
  // exclude unnecessary entries for each read"), where keys are integer-dense; off: whole leaves.
  bool scan_intersection = true;
  // Read delegation and write combining (RDWC, from SMART; §5.1 applies it to CHIME and all
  // competitors): concurrent searches of one key on a compute node share one search, concurrent
  // updates of one key one write (dmrt/indexes/common/rdwc.h). off: every operation runs itself.
  bool rdwc = true;
  // Sibling-based validation (§4.2.3): leaves hold no fence keys; a read validates its cached
  // parent and detects half-splits by the sibling pointer (and inserts by argmax). off: the
  // paper's baseline, every metadata replica also carries the leaf's two fence keys
  // (2 key_size / H more bytes per entry, Fig. 16) and reads validate by them.
  bool sibling_validation = true;
  // Variable-length items (§4.5; CHIME-Indirect of Fig. 13): a leaf entry holds the key and an
  // 8-byte pointer (block length, address) to an out-of-leaf KV block holding the value
  // (dmrt/indexes/common/kv_block.h). A search reads the neighborhood, then the block (one more
  // round trip); an insert or update writes a new block in the lock's round trip and installs its
  // pointer with the entry write (updates are out of place). off: values inline (value_size).
  bool indirect = false;
  // The leaf lock word names its holder's process (8 bits taken from the vacancy bitmap: 49
  // buckets instead of 57 at span 64), so that a waiter can take over a lock whose holder's
  // process died (issue 39; dmrt-bench turns it on with --on-peer-loss continue). off: the
  // paper's word, and such a lock waits for ever.
  bool lock_holders = false;
  Sync sync = Sync::kAuto;                  // leaf versions or checksums (see Sync)
  unsigned root_slot = root_slots::kChime;  // layout::root_slot on the first memory node
  // Test-only faults that prove the checkers can fail; compiled out without
  // DMRT_FAULT_INJECTION (dmrt/indexes/common/faults.h). Never set them elsewhere.
  struct Faults {
    bool skip_bitmap_check = false;      // drop the level-3 (hop bitmap) validation
    bool ack_without_write = false;      // insert returns true without writing
    FlushPoints<FlushPoint> skip_flush;  // these flush points issue no hint (tests/coherence)
  } faults;

  // The fields a user sets (bench flags --chime-*, JSON, TOML), each declared once; the bench
  // adds --chime-factor and --chime-hotspot-mb on top (bench/indexes/chime.cpp).
  static constexpr auto fields();

  // The setting a tree runs with on a transport that is (or is not) line-atomic.
  Sync resolved_sync(bool line_atomic) const {
    if (sync != Sync::kAuto) return sync;
    return line_atomic && neighborhood <= 14 ? Sync::kVersions : Sync::kChecksum;
  }
};

constexpr auto Options::fields() {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  return option_fields(
      option_number("span", &Options::span, "Entries per hopscotch leaf", 2u, 1024u),
      option_number("neighborhood", &Options::neighborhood, "Hopscotch neighborhood H (<= span)",
                    1u, 16u),
      option_number("internal_span", &Options::internal_span, "Pivots per internal node", 4u,
                    1024u),
      option_number("cache_bytes", &Options::cache_bytes,
                    "Internal-node cache per compute node (bench: --cache-mb)", uint64_t{0}, kMax)
          .no_flag(),
      option_number("hotspot_bytes", &Options::hotspot_bytes,
                    "Hotspot buffer per compute node, 16 B per entry (bench: --chime-hotspot-mb)",
                    uint64_t{0}, kMax)
          .no_flag(),
      option_switch("hopscotch_leaf", &Options::hopscotch_leaf,
                    "Hopscotch leaves: read one neighborhood (off: every leaf access reads the "
                    "whole leaf)"),
      option_switch("vacancy_piggyback", &Options::vacancy_piggyback,
                    "Vacancy bitmap fetched by the lock's masked CAS (off: a separate READ after "
                    "locking)"),
      option_switch("metadata_replication", &Options::metadata_replication,
                    "Leaf metadata replicated per neighborhood (off: a separate metadata READ)"),
      option_switch("speculative_read", &Options::speculative_read,
                    "Hotness-aware speculative single-entry read with the hotspot buffer"),
      option_switch("parallel_scan", &Options::parallel_scan,
                    "Scans read the leaves a cached internal node names in one round trip (off: "
                    "one leaf per round trip along the siblings)"),
      option_switch("scan_intersection", &Options::scan_intersection,
                    "Scans read only the neighborhoods of the integer keys a range covers in a "
                    "leaf it covers in part, where keys are integer-dense (off: whole leaves)"),
      option_switch(
          "rdwc", &Options::rdwc,
          "Read delegation and write combining: concurrent same-key searches (updates) on "
          "a compute node share one search (write)"),
      option_switch("sibling_validation", &Options::sibling_validation,
                    "Sibling-based validation: leaves hold no fence keys (off: every metadata "
                    "replica also carries the leaf's two fence keys, and reads check them)"),
      option_switch("indirect", &Options::indirect,
                    "Variable-length items: entries hold a pointer to an out-of-leaf KV block "
                    "(CHIME-Indirect; one more round trip per search; off: values inline)"),
      option_switch("lock_holders", &Options::lock_holders,
                    "The leaf lock word names its holder's process (8 fewer vacancy-bitmap "
                    "bits), so that a dead holder's lock can be taken over"),
      option_choice("sync", &Options::sync,
                    "Leaf synchronization: the paper's cache-line versions (needs a line-atomic "
                    "transport: sim, verbs), per-object checksums (any transport), or auto "
                    "(versions where the transport allows)",
                    kSyncNames));
}

}  // namespace dmrt::chime
