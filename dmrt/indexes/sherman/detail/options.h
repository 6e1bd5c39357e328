// Sherman options: geometry, cache budget and the typed technique switches.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "dmrt/indexes/common/flush_points.h"
#include "dmrt/indexes/common/root_slots.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt::sherman {

// Leaf synchronization.
//   versions: the paper's two-level versions: front/rear node versions and 4-bit front/rear
//             entry versions (leaf.h); sound where the transport is line-atomic
//             (dmrt/runtime/transport.h) and entries fit a cache line (value_size <= 54).
//   checksum: an 8-byte meta word per object with a 32-bit checksum and the node version; sound
//             where only 8-byte words are atomic (dmrt/runtime/sealed_object.h).
//   auto:     versions where both hold, else checksum.
enum class Sync : uint8_t { kAuto, kVersions, kChecksum };
inline constexpr std::string_view kSyncNames[] = {"auto", "versions", "checksum"};

// Where a port to non-coherent memory flushes (FlushHint; docs/cxl-porting.md, "Coherence"). The
// lock word changes by CAS and a release's lock word, which the device executes; so does the root
// word when the tree grows. A split's new leaf is a leaf WRITE.
enum class FlushPoint : uint8_t {
  kLeafInvalidate,      // leaf READs (searches, and under the lock) see memory
  kLeafWriteBack,       // entry and leaf WRITEs are written back before the unlock lands
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
  uint32_t value_size = 8;  // bytes per value (stored inline, zero-padded)
  // The longest key, in bytes; 8 keeps integer keys. Larger (or smaller): byte-string keys of 1 to
  // key_size bytes, each stored inline in a fixed slot (dmrt/indexes/common/btree_keys.h).
  uint32_t key_size = 8;
  uint64_t cache_bytes = uint64_t{100} << 20;  // internal-node cache budget per compute node
  uint32_t leaf_span = 64;                     // entries per leaf
  uint32_t internal_span = 64;                 // pivots per internal node
  // Technique switches (Sherman's factor analysis).
  bool sorted_leaves = false;    // false: unsorted leaves, an insert writes one entry
  bool local_lock_table = true;  // hierarchical lock: local queue + remote lock hand-over
  uint32_t handover_max = 8;     // consecutive local hand-overs before the lock is released
  bool write_combining = true;   // write-back and unlock in one batch (one round trip)
  // Leaf lock words in a table in each memory node's device memory (the NIC's on-chip memory,
  // dmrt/runtime/address.h), a leaf's word chosen by hashing its address, as the paper's HOCL does;
  // off: the lock word heads the leaf in host memory.
  bool on_chip_locks = true;
  // Lock words per memory node's table: 32768 x 8 B = the 256 KiB of on-chip memory the paper
  // uses (ConnectX-5), all of a memory node's default device memory.
  uint32_t on_chip_lock_words = 32768;
  unsigned root_slot = root_slots::kSherman;  // layout::root_slot on the first memory node
  // On every memory node: the address of its on-chip lock table.
  unsigned locks_root_slot = root_slots::kShermanLocks;
  uint32_t lock_table_slots = 4096;
  // Read delegation and write combining (RDWC, from SMART; dmrt/indexes/common/rdwc.h): concurrent
  // searches of one key on a compute node share one search, concurrent updates one write. Not
  // in the Sherman paper (off); the CHIME paper's evaluation applies it to Sherman ("for
  // fairness, RDWC ... applied to all competitors"), so its reproduction specs switch it on.
  bool rdwc = false;
  Sync sync = Sync::kAuto;  // leaf versions or checksums (see Sync)
  // Test-only faults that prove the checkers can fail; compiled out without
  // DMRT_FAULT_INJECTION (dmrt/indexes/common/faults.h). Never set them elsewhere.
  struct Faults {
    bool skip_validation = false;        // accept torn leaf reads
    bool ack_without_write = false;      // insert returns true without writing the entry
    FlushPoints<FlushPoint> skip_flush;  // these flush points issue no hint (tests/coherence)
  } faults;

  // The fields a user sets (bench flags --sherman-*, JSON, TOML), each declared once.
  static constexpr auto fields();

  // The setting a tree runs with on a transport that is (or is not) line-atomic.
  Sync resolved_sync(bool line_atomic) const {
    if (sync != Sync::kAuto) return sync;
    return line_atomic && value_size <= 54 && key_size == 8 ? Sync::kVersions : Sync::kChecksum;
  }
};

constexpr auto Options::fields() {
  return option_fields(
      option_number("span", &Options::leaf_span, "Entries per leaf", 4u, 1024u),
      option_number("internal_span", &Options::internal_span, "Pivots per internal node", 4u,
                    1024u),
      option_number("cache_bytes", &Options::cache_bytes,
                    "Internal-node cache per compute node (bench: --cache-mb)", uint64_t{0},
                    std::numeric_limits<uint64_t>::max())
          .no_flag(),
      option_switch("sorted_leaves", &Options::sorted_leaves,
                    "Sorted leaf entries (off: unsorted, an insert writes one entry)"),
      option_switch("local_lock_table", &Options::local_lock_table,
                    "Hierarchical lock: a compute node's local lock table queues its clients and "
                    "hands the remote lock over (off: every client CASes the remote lock word)"),
      option_number("handover_max", &Options::handover_max,
                    "Consecutive local hand-overs before the lock is released", 1u, 1u << 20),
      option_number("lock_table_slots", &Options::lock_table_slots,
                    "Local lock table slots per compute node", 1u, 1u << 24),
      option_switch("write_combining", &Options::write_combining,
                    "Write-back and unlock in one batch (off: the unlock is a separate round "
                    "trip)"),
      option_switch("rdwc", &Options::rdwc,
                    "Read delegation and write combining (SMART's, as the CHIME paper applies "
                    "it): concurrent same-key searches (updates) on a compute node share one "
                    "search (write)"),
      option_choice("sync", &Options::sync,
                    "Leaf synchronization: the paper's two-level versions (needs a line-atomic "
                    "transport: sim, verbs), per-object checksums (any transport), or auto "
                    "(versions where the transport allows)",
                    kSyncNames),
      option_switch("on_chip_locks", &Options::on_chip_locks,
                    "Leaf lock words in a hashed lock table in the memory nodes' device memory "
                    "(NIC on-chip memory; off: the lock word heads the leaf in host memory)"),
      option_number("on_chip_lock_words", &Options::on_chip_lock_words,
                    "Lock words in each memory node's on-chip lock table (8 B each)", 1u,
                    1u << 27));
}

}  // namespace dmrt::sherman
