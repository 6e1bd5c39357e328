// linprobe options: the table's fixed geometry, its placement and one test-only fault switch.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "dmrt/indexes/common/flush_points.h"
#include "dmrt/indexes/common/root_slots.h"
#include "dmrt/runtime/address.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt::linprobe {

// Home meaning "the first memory node of the cluster".
inline constexpr NodeId kFirstMemoryNode = 0xffff;
// A block holds key, length, value and checksum; the runtime's allocator recycles blocks up to
// 4 KiB, so values stop 24 bytes short of that.
inline constexpr uint32_t kMaxValueBytes = 4096 - 24;
inline constexpr uint32_t kMaxWindow = 8;  // buckets a key may live in (one READ of <= 512 B)

// Where a port to non-coherent memory flushes (FlushHint; docs/cxl-porting.md, "Coherence"). The
// lock word and the slots change only by atomics and a release's lock word, which the device
// executes, so no point writes them back.
enum class FlushPoint : uint8_t {
  kWindowInvalidate,  // the window READ and a matched slot's re-READ see memory
  kBlockInvalidate,   // a matched slot's block READ sees memory (blocks are recycled)
  kBlockWriteBack,    // a new block is written back before the CAS that publishes it
};
inline constexpr FlushPoint kFlushPoints[] = {
    FlushPoint::kWindowInvalidate, FlushPoint::kBlockInvalidate, FlushPoint::kBlockWriteBack};
constexpr std::string_view flush_point_name(FlushPoint p) {
  switch (p) {
    case FlushPoint::kWindowInvalidate:
      return "window_invalidate";
    case FlushPoint::kBlockInvalidate:
      return "block_invalidate";
    case FlushPoint::kBlockWriteBack:
      return "block_write_back";
  }
  return "?";
}

struct Options {
  // Largest value accepted, in bytes; every KV block has room for this much (longer: LimitError).
  uint32_t value_size = 8;
  // Home buckets (64 B: a lock word and 7 slots). The table never grows: size it for the keys.
  uint64_t buckets = 4096;
  // Probe window: a key lives in one of the `window` buckets from its home bucket on.
  uint32_t window = 4;
  // When non-zero, `buckets` is raised so these keys fill at most a quarter of the slots: with
  // window 4, the first window fills at about 40% load in a table of a million keys (README).
  uint64_t expected_keys = 0;
  // Memory node of the table (kFirstMemoryNode = the first one) and its root slot there.
  NodeId home = kFirstMemoryNode;
  unsigned root_slot = root_slots::kLinprobe;
  // Test-only: acts only in builds with DMRT_FAULT_INJECTION (meson fault_injection). Proves the
  // tests catch two inserts of one key that both succeed.
  struct Faults {
    bool insert_skips_lock = false;      // insert neither takes nor releases its home bucket's lock
    FlushPoints<FlushPoint> skip_flush;  // these flush points issue no hint (tests/coherence)
  } faults;

  // The fields a user sets (bench flags --linprobe-*, JSON, TOML). value_size is the bench's
  // --value-size; expected_keys its sizing.
  static constexpr auto fields();
};

constexpr auto Options::fields() {
  return option_fields(
      option_number("buckets", &Options::buckets,
                    "Home buckets of 7 slots (fixed capacity; raised to fit the expected keys)",
                    uint64_t{1}, uint64_t{1} << 32),
      option_number("window", &Options::window,
                    "Probe window: buckets a key may live in, read in one READ", 1u, kMaxWindow),
      option_number("expected_keys", &Options::expected_keys,
                    "Keys the table will hold (raises buckets to a quarter load)", uint64_t{0},
                    std::numeric_limits<uint64_t>::max())
          .no_flag());
}

}  // namespace dmrt::linprobe
