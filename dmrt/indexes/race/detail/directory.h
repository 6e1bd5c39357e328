// RACE directory: remote format (root word, 2^max entries, append-only doubling) and client cache.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "dmrt/indexes/race/detail/layout.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/liveness.h"

namespace dmrt::race {

// Remote directory at a fixed address on the home node (paper §3.4.2: it never moves):
//   +0   root word: lock:1 | owner:8 @48 | GD:8   (lock serialises directory writers: doubling,
//                                          entry rewrites of a split; [C] notes choice 19)
//   +8   resizes counter (FAA)   +16 subtables counter (FAA)   +24 config fingerprint
//   +64  entry[0 .. 2^max_depth)         (only the first 2^GD are used)
// Entry: lock:1 | owner:8 @54 | LD:6 @48 | subtable ptr48 (notes choice 5; LD <= 20). The lock
// bit of the canonical entry (index = subtable suffix) is the per-subtable resize lock; copies
// made by doubling drop it. A held lock names its holder's process (Client::process_tag; 0 for
// one process alone), so that a split whose process died can be rolled forward (issue 39).
struct Dir {
  static constexpr uint64_t kLock = uint64_t{1} << 63;
  static constexpr uint64_t kRootOffset = 0;
  static constexpr uint64_t kResizesOffset = 8;
  static constexpr uint64_t kSubtablesOffset = 16;
  static constexpr uint64_t kConfigOffset = 24;
  static constexpr uint64_t kEntriesOffset = 64;

  static uint64_t bytes(uint32_t max_depth) { return kEntriesOffset + (uint64_t{8} << max_depth); }
  static GlobalAddress entry_addr(GlobalAddress dir, uint64_t idx) {
    return dir + kEntriesOffset + 8 * idx;
  }
  static constexpr unsigned kEntryOwnerShift = 54;
  static constexpr unsigned kRootOwnerShift = 48;

  static uint64_t make_entry(GlobalAddress table, uint32_t ld) {
    return (uint64_t{ld & 0x3f} << 48) | pack_ptr48(table);
  }
  // `e` locked by process `tag`.
  static uint64_t locked_entry(uint64_t e, uint8_t tag) {
    return (e & ~(kLock | uint64_t{0xff} << kEntryOwnerShift)) | kLock |
           uint64_t{tag} << kEntryOwnerShift;
  }
  static uint64_t unlocked_entry(uint64_t e) {
    return e & ~(kLock | uint64_t{0xff} << kEntryOwnerShift);
  }
  static uint8_t entry_owner(uint64_t e) { return static_cast<uint8_t>(e >> kEntryOwnerShift); }
  static GlobalAddress table(uint64_t e) { return unpack_ptr48(e); }
  static uint32_t ld(uint64_t e) { return static_cast<uint32_t>((e >> 48) & 0x3f); }
  static bool locked(uint64_t e) { return (e & kLock) != 0; }
  static uint32_t gd(uint64_t root) { return static_cast<uint32_t>(root & 0xff); }
  static uint64_t locked_root(uint32_t gd, uint8_t tag) {
    return kLock | uint64_t{tag} << kRootOwnerShift | gd;
  }
  static uint8_t root_owner(uint64_t root) { return static_cast<uint8_t>(root >> kRootOwnerShift); }
  static uint64_t mask(uint32_t depth) { return (uint64_t{1} << depth) - 1; }
};

// A client's view of the directory (paper §3.1: clients cache only the used area). Never
// invalidated by messages: staleness shows in bucket headers (SRCD) and triggers refresh().
// With caching off it keeps only GD and reads the one entry it needs per operation.
template <Transport T>
class DirectoryCache {
 public:
  // `read_hint`: FlushPoint::kDirectoryInvalidate's hint, on every READ of the directory.
  DirectoryCache(GlobalAddress dir, bool enabled, FlushHint read_hint = FlushHint::kNone)
      : dir_(dir), enabled_(enabled), hint_(read_hint) {}

  // Reads GD, then the used area: two round trips, only on a stale read (case 3) or a split.
  void refresh(Client<T>& c) {
    uint64_t root = c.template read_value<uint64_t>(dir_ + Dir::kRootOffset, hint_);
    gd_ = Dir::gd(root);
    if (!enabled_) return;
    entries_.resize(size_t{1} << gd_);
    uint64_t bytes = 8 * entries_.size();
    // One READ moves at most 4 GiB; a 2^16-entry directory is 512 KiB.
    c.read(Dir::entry_addr(dir_, 0), entries_.data(), static_cast<uint32_t>(bytes), hint_);
    ++refreshes_;
  }

  // The entry for a key hash: from the cache, or (cache off) by one READ.
  uint64_t entry_for(Client<T>& c, uint64_t key_hash) {
    uint64_t idx = key_hash & Dir::mask(gd_);
    if (enabled_) return entries_[idx];
    return c.template read_value<uint64_t>(Dir::entry_addr(dir_, idx), hint_);
  }

  uint32_t global_depth() const { return gd_; }
  uint64_t refreshes() const { return refreshes_; }
  size_t bytes() const { return entries_.size() * 8; }
  GlobalAddress dir() const { return dir_; }
  FlushHint read_hint() const { return hint_; }

 private:
  GlobalAddress dir_;
  bool enabled_;
  FlushHint hint_;
  uint32_t gd_ = 0;
  std::vector<uint64_t> entries_;
  uint64_t refreshes_ = 0;
};

// Directory writers hold the root lock (CAS on the root word), briefly: while doubling and while
// rewriting the entries of one split. Waiting pauses the fiber so the holder can run. A holder
// whose process died is replaced once its word has stood for the lease: the taker goes on from
// the root as it stands (a doubling not yet published is unused; entries a split half rewrote
// are rewritten whole by whoever rolls that split forward, Splitter::roll_forward), counted in
// `*takeovers`. Returns the root word before it was taken.
template <Transport T>
uint64_t lock_root(Client<T>& c, GlobalAddress dir, FlushHint read_hint,
                   std::atomic<uint64_t>* takeovers = nullptr) {
  GlobalAddress root = dir + Dir::kRootOffset;
  const uint8_t tag = c.process_tag();
  uint64_t cur = c.template read_value<uint64_t>(root, read_hint);
  HolderWatch watch;
  for (;;) {
    if (!Dir::locked(cur) || watch.dead_tag(c, cur, Dir::root_owner(cur))) {
      const bool dead = Dir::locked(cur);
      uint64_t old = c.cas(root, cur, Dir::locked_root(Dir::gd(cur), tag));
      if (old == cur) {
        if (dead && takeovers) takeovers->fetch_add(1, std::memory_order_relaxed);
        return cur;
      }
      cur = old;
    } else {
      c.pause();
      cur = c.template read_value<uint64_t>(root, read_hint);
    }
  }
}
template <Transport T>
void unlock_root(Client<T>& c, GlobalAddress dir, uint32_t gd) {
  uint64_t v = gd;
  c.release(dir + Dir::kRootOffset, &v, 8);
}

}  // namespace dmrt::race
