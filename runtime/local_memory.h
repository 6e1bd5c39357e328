// Race-free access to region memory from this CPU, with RDMA's semantics (8-byte atomicity only).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/verbs.h"

namespace dmrt::local {

// Every access goes through std::atomic_ref on aligned 8-byte words: concurrent verbs from other
// threads or processes are then data-race-free in the C++ model (ThreadSanitizer agrees), and a
// READ that races a WRITE may see a mix of old and new words, exactly as an RDMA READ may.
// Acquire/release per word costs nothing on x86 and keeps RC-style ordering between verbs.

inline std::atomic_ref<uint64_t> word(std::byte* p) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p));
}

inline uint64_t load_word(std::byte* p) {
  return word(p).load(std::memory_order_acquire);
}
inline void store_word(std::byte* p, uint64_t v) {
  word(p).store(v, std::memory_order_release);
}

// Copies [src, src+len) of region memory into private memory.
inline void read(std::byte* src, void* dst, size_t len) {
  auto* out = static_cast<std::byte*>(dst);
  auto addr = reinterpret_cast<uintptr_t>(src);
  size_t head = addr & 7;
  std::byte* p = src - head;
  while (len > 0) {
    uint64_t w = load_word(p);
    size_t take = 8 - head < len ? 8 - head : len;
    std::memcpy(out, reinterpret_cast<std::byte*>(&w) + head, take);
    out += take;
    len -= take;
    p += 8;
    head = 0;
  }
}

// Copies private memory into region memory. Partial words at either end are merged with a CAS so
// the neighbouring bytes, which may belong to someone else, are never clobbered.
inline void write(std::byte* dst, const void* src, size_t len) {
  auto* in = static_cast<const std::byte*>(src);
  auto addr = reinterpret_cast<uintptr_t>(dst);
  size_t head = addr & 7;
  std::byte* p = dst - head;
  while (len > 0) {
    size_t take = 8 - head < len ? 8 - head : len;
    if (take == 8) {
      uint64_t w;
      std::memcpy(&w, in, 8);
      store_word(p, w);
    } else {
      auto ref = word(p);
      uint64_t old = ref.load(std::memory_order_relaxed);
      uint64_t merged;
      do {
        merged = old;
        std::memcpy(reinterpret_cast<std::byte*>(&merged) + head, in, take);
      } while (!ref.compare_exchange_weak(old, merged, std::memory_order_acq_rel));
    }
    in += take;
    len -= take;
    p += 8;
    head = 0;
  }
}

inline uint64_t cas(std::byte* p, uint64_t expected, uint64_t desired) {
  word(p).compare_exchange_strong(expected, desired, std::memory_order_seq_cst);
  return expected;  // holds the prior value whether or not the exchange happened
}

inline uint64_t faa(std::byte* p, uint64_t add) {
  return word(p).fetch_add(add, std::memory_order_seq_cst);
}

// Masked CAS by a CAS loop: exact on CPU memory, but it is emulation and is reported as such.
// Returns the prior value; `attempts` receives how many CAS instructions were issued.
inline uint64_t masked_cas(std::byte* p, uint64_t compare, uint64_t compare_mask, uint64_t swap,
                           uint64_t swap_mask, uint64_t* attempts = nullptr) {
  auto ref = word(p);
  uint64_t old = ref.load(std::memory_order_acquire);
  uint64_t n = 0;
  for (;;) {
    if (((old ^ compare) & compare_mask) != 0) break;
    uint64_t desired = (old & ~swap_mask) | (swap & swap_mask);
    ++n;
    if (ref.compare_exchange_weak(old, desired, std::memory_order_seq_cst)) break;
  }
  if (attempts) *attempts = n;
  return old;
}

// Performs one verb on local memory at `p` (the verb's target, already translated and bounds-
// checked) and stores an atomic's prior value in v.result. Returns the attempts a masked CAS took
// (its CAS loop: the transports count them as emulation), 0 for every other verb.
inline uint64_t apply(std::byte* p, const Verb& v) {
  uint64_t old = 0, attempts = 0;
  switch (v.kind) {
    case VerbKind::kRead:
      read(p, v.local, v.length);
      return 0;
    case VerbKind::kWrite:
      write(p, v.local, v.length);
      return 0;
    case VerbKind::kCas:
      old = cas(p, v.compare, v.swap);
      break;
    case VerbKind::kFaa:
      old = faa(p, v.swap);
      break;
    case VerbKind::kMaskedCas:
      old = masked_cas(p, v.compare, v.compare_mask, v.swap, v.swap_mask, &attempts);
      break;
  }
  if (v.result) *v.result = old;
  return attempts;
}

}  // namespace dmrt::local
