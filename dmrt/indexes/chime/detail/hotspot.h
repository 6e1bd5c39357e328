// Hotspot buffer: per-compute-node LFU table of hot leaf entries for speculative single-entry
// reads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/huge_pages.h"

namespace dmrt::chime {

// x % d for a divisor fixed at construction, without a division: the remainder computed directly
// from the fraction ceil(2^128 / d) (Lemire, Kaser and Kurz, "Faster remainder by direct
// computation", 2019), exact for every 64-bit x and d. A search probes H buckets; their H 64-bit
// divisions (tens of cycles each, one after the other in the divider) were most of a probe's time.
class ExactMod {
 public:
  explicit ExactMod(uint64_t d) : d_(d), c_(d > 1 ? ~u128{0} / d + 1 : 0) {}
  uint64_t of(uint64_t x) const {
    if (d_ <= 1) return 0;
    const u128 low = c_ * x;  // the fractional part of x / d, as a 128-bit fixed-point number
    const u128 lo = static_cast<u128>(static_cast<uint64_t>(low)) * d_;
    const u128 hi = static_cast<u128>(static_cast<uint64_t>(low >> 64)) * d_;
    return static_cast<uint64_t>((hi + (lo >> 64)) >> 64);
  }
  uint64_t divisor() const { return d_; }

 private:
  using u128 = unsigned __int128;
  uint64_t d_;
  u128 c_;
};

// Entry (16 B, as in the paper): key word = leaf address | slot index (leaves are 256-byte
// aligned, so the low byte is free), value word = fingerprint:16 | counter:32. Bucketed
// 4-way; a full bucket replaces its least-counted entry (LFU). Lock-free: the two words may be
// updated non-atomically together by racing threads, which is harmless because a speculative
// read is always validated against the entry it fetches.
class HotspotBuffer {
 public:
  explicit HotspotBuffer(uint64_t bytes) : n_(bytes / 16 / kWays * kWays), buckets_(n_ / kWays) {
    if (!n_) return;
    // A bucket is one cache line, and the table (30 MB by default, probed at H random buckets
    // per search) is on transparent huge pages where the host allows: with 4 KiB pages nearly
    // every probe missed the TLB too, and a 16-byte-aligned array put each bucket across two lines.
    mem_ = HugePageMemory(buckets_.divisor() * sizeof(Bucket));
    std::uninitialized_default_construct_n(table(), buckets_.divisor());
  }
  HotspotBuffer(const HotspotBuffer&) = delete;
  HotspotBuffer& operator=(const HotspotBuffer&) = delete;
  bool enabled() const { return n_ != 0; }

  // Counter of (leaf, idx) if buffered with this fingerprint, else 0.
  uint32_t lookup(GlobalAddress leaf, uint32_t idx, uint16_t fp) const {
    if (!n_) return 0;
    uint64_t key = leaf.raw() | idx;
    const Slot* b = bucket(key);
    for (unsigned i = 0; i < kWays; ++i) {
      if (b[i].key.load(std::memory_order_relaxed) != key) continue;
      uint64_t v = b[i].val.load(std::memory_order_relaxed);
      return (v >> 32) == fp ? static_cast<uint32_t>(v) : 0;
    }
    return 0;
  }

  // Records an access to a KV entry.
  void touch(GlobalAddress leaf, uint32_t idx, uint16_t fp) {
    if (!n_) return;
    uint64_t key = leaf.raw() | idx;
    Slot* b = bucket(key);
    unsigned victim = 0;
    uint32_t least = UINT32_MAX;
    for (unsigned i = 0; i < kWays; ++i) {
      if (b[i].key.load(std::memory_order_relaxed) == key) {
        uint64_t v = b[i].val.load(std::memory_order_relaxed);
        uint32_t cnt = (v >> 32) == fp ? static_cast<uint32_t>(v) : 0;  // new occupant: restart
        if (cnt < UINT32_MAX) ++cnt;
        b[i].val.store(uint64_t{fp} << 32 | cnt, std::memory_order_relaxed);
        return;
      }
      uint32_t c = static_cast<uint32_t>(b[i].val.load(std::memory_order_relaxed));
      if (c < least) least = c, victim = i;
    }
    b[victim].key.store(key, std::memory_order_relaxed);
    b[victim].val.store(uint64_t{fp} << 32 | 1, std::memory_order_relaxed);
  }

  uint64_t bytes() const { return n_ * 16; }

 private:
  static constexpr unsigned kWays = 4;
  struct Slot {
    std::atomic<uint64_t> key{0};
    std::atomic<uint64_t> val{0};
  };
  struct alignas(64) Bucket {
    Slot s[kWays];
  };
  Bucket* table() const { return reinterpret_cast<Bucket*>(mem_.data()); }
  Slot* bucket(uint64_t key) const { return table()[buckets_.of(mix64(key))].s; }

  size_t n_;
  ExactMod buckets_;
  HugePageMemory mem_;
};

}  // namespace dmrt::chime
