// RACE hashing options: geometry, the paper's switchable techniques and test-only fault switches.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "dmrt/indexes/common/flush_points.h"
#include "dmrt/indexes/common/root_slots.h"
#include "dmrt/runtime/address.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt::race {

// Directory home meaning "the first memory node of the cluster".
inline constexpr NodeId kFirstMemoryNode = 0xffff;

// Where a port to non-coherent memory flushes (FlushHint; docs/cxl-porting.md, "Coherence"). Slots
// and headers change only by CAS, which the device executes, so no point writes them back; so do
// the directory's lock words (root word and canonical entries, released at memory). A split's
// bucket and block READs are the bucket and block points. A doubling's copied entries are always
// written back, not a point: with the directory cache on, the splitter's refresh() after the split
// would write them back anyway (its invalidation does), and a reader meeting one still zero
// meanwhile only retries, so no run can show the flush needed; with the cache off nothing would.
enum class FlushPoint : uint8_t {
  kBucketInvalidate,     // combined-bucket READs, header and slot re-READs see memory
  kBlockInvalidate,      // KV-block READs see memory (blocks are recycled)
  kBlockWriteBack,       // a new KV block is written back before the slot CAS that publishes it
  kDirectoryInvalidate,  // directory READs (a refresh, the root word, a split's entries) see memory
  kSubtableWriteBack,    // a split's new subtable, and its buckets' final headers, are written back
};
inline constexpr FlushPoint kFlushPoints[] = {
    FlushPoint::kBucketInvalidate, FlushPoint::kBlockInvalidate, FlushPoint::kBlockWriteBack,
    FlushPoint::kDirectoryInvalidate, FlushPoint::kSubtableWriteBack};
constexpr std::string_view flush_point_name(FlushPoint p) {
  switch (p) {
    case FlushPoint::kBucketInvalidate:
      return "bucket_invalidate";
    case FlushPoint::kBlockInvalidate:
      return "block_invalidate";
    case FlushPoint::kBlockWriteBack:
      return "block_write_back";
    case FlushPoint::kDirectoryInvalidate:
      return "directory_invalidate";
    case FlushPoint::kSubtableWriteBack:
      return "subtable_write_back";
  }
  return "?";
}

// Where a split stops dead under Options::faults.split_dies_at (resize.h's steps).
enum class SplitDeath : uint8_t {
  kNever,
  kAfterCreate,   // N made, not published (step 2)
  kAfterPublish,  // N published, nothing moved (step 3)
  kMidMove,       // a bucket's items copied into N, not yet deleted from S (step 4 (2))
  kAfterMove,     // every bucket moved, S's entries not updated (before step 5)
  kMidFinish,     // S's entries updated, N's entry and the root lock still held (step 5)
};

struct Options {
  // Largest value accepted, in bytes (KV blocks are sized by the actual value, in 64 B units, so a
  // large limit costs nothing for small values). Up to 16 KiB minus the block header/checksum.
  uint32_t value_size = 8;
  // The longest key, in bytes; 8 keeps integer keys. Sizing like value_size (KV blocks hold the
  // actual key): any other value stores byte keys of 1..key_size bytes in the KV blocks and
  // hashes their bytes (see README "Long keys"). key_size + value_size <= 16 KiB - 16.
  uint32_t key_size = 8;
  // Directory depth at creation (2^depth subtables) and the reserved maximum (paper fn. 4: 16).
  uint32_t initial_global_depth = 2;
  uint32_t max_global_depth = 16;
  // Bucket groups (main|overflow|main, 192 B) per subtable; >= 2 so two locations differ in group.
  uint32_t groups_per_subtable = 1024;
  // When non-zero, initial_global_depth is raised so these keys fit at ~80% load without resizing.
  uint64_t expected_keys = 0;
  // SRCD client directory cache (paper §3.4.1). Off: every operation reads its directory entry
  // first (+1 round trip), as in the paper's Fig. 14 baseline.
  bool directory_cache = true;
  // Concurrent inserts of one key pick the same slot from the same bucket snapshot, so that most
  // races end in one failed CAS rather than a duplicate to resolve. [C] not in the paper, whose
  // duplicate-resolution agreement stays in place for the snapshots that differ.
  bool same_slot_for_same_key = true;
  // Search, update and remove re-READ the four bucket headers in the batch of every bucket read
  // (dmrt before 2026-11-27; 4 READs, 32 B more per operation). Off (default), as the paper's
  // search: they read the two combined buckets only, and a miss is confirmed afterwards, where a
  // READ is not line-atomic (shm), by re-reading the headers (+1 round trip on misses only;
  // notes choice 24). Inserts always re-read them (their duplicate check needs it).
  bool reread_headers_in_view = false;
  // Memory node holding the directory (kFirstMemoryNode = the first one); root slot used there.
  NodeId home = kFirstMemoryNode;
  unsigned root_slot = root_slots::kRace;
  // Test-only faults that prove a checker can fail; they act only in builds with
  // DMRT_FAULT_INJECTION (meson fault_injection: on in test builds). Never set them elsewhere.
  struct Faults {
    bool delete_skips_cas = false;           // remove() reports success without removing
    bool skip_duplicate_resolution = false;  // insert() skips the re-read and duplicate agreement
    FlushPoints<FlushPoint> skip_flush;      // these flush points issue no hint (tests/coherence)
    // A splitter that stops dead at this point of its split (throwing SplitterDied), its locks
    // held and its work half done, for a survivor to roll forward (issue 39, tests/race).
    SplitDeath split_dies_at = SplitDeath::kNever;
    // An insert that stops dead right after its tentative claim (throwing ClaimerDied).
    bool insert_dies_after_claim = false;
  } faults;

  // The fields a user sets (bench flags --race-*, JSON, TOML), each declared once. value_size
  // and key_size (the bench's --value-size, --key-size), the placement and the faults are not
  // among them.
  static constexpr auto fields();
};

constexpr auto Options::fields() {
  return option_fields(
      option_switch("directory_cache", &Options::directory_cache,
                    "Client directory cache (SRCD; off: every operation first reads its directory "
                    "entry, +1 round trip, the paper's Fig. 14 baseline)"),
      option_switch(
          "same_slot_for_same_key", &Options::same_slot_for_same_key,
          "Concurrent inserts of one key pick the same slot (fewer duplicates to resolve)")
          .named("same-slot"),
      option_switch("reread_headers_in_view", &Options::reread_headers_in_view,
                    "Search/update/remove re-read the four bucket headers with every bucket read "
                    "(off: only a miss is confirmed, by a header re-read where READs are not "
                    "line-atomic)")
          .named("reread-headers"),
      option_number("groups_per_subtable", &Options::groups_per_subtable,
                    "Bucket groups (main|overflow|main) per subtable", 2u, 1u << 20),
      option_number("initial_global_depth", &Options::initial_global_depth,
                    "Directory depth at creation (raised to fit the expected keys)", 0u, 20u)
          .named("initial-depth"),
      option_number("max_global_depth", &Options::max_global_depth,
                    "Largest directory depth (reserved at creation)", 0u, 20u)
          .named("max-depth"),
      option_number("expected_keys", &Options::expected_keys,
                    "Keys the index will hold (raises the initial depth)", uint64_t{0},
                    std::numeric_limits<uint64_t>::max())
          .no_flag());
}

}  // namespace dmrt::race
