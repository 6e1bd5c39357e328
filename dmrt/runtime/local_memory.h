// Race-free access to region memory from this CPU, with RDMA's semantics (8-byte atomicity only).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dmrt/runtime/verbs.h"

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

// Up to 7 bytes between a word and private memory: a fixed-size copy per piece, so that a short
// tail never becomes a call to memcpy.
inline void copy_tail(std::byte* out, const std::byte* in, size_t len) {
  if (len & 4) {
    std::memcpy(out, in, 4);
    out += 4;
    in += 4;
  }
  if (len & 2) {
    std::memcpy(out, in, 2);
    out += 2;
    in += 2;
  }
  if (len & 1) *out = *in;
}

// Copies [src, src+len) of region memory into private memory. The whole words in the middle are
// the bulk of every READ (a bucket group, a leaf): one load and one store each, four at a time;
// before,
// a variable-length memcpy per word cost about 30 instructions a word (shm profile of RACE
// searches, docs/results.md "shm against local peers").
inline void read(std::byte* src, void* dst, size_t len) {
  auto* out = static_cast<std::byte*>(dst);
  const size_t head = reinterpret_cast<uintptr_t>(src) & 7;
  std::byte* p = src - head;
  if (head != 0 && len > 0) {
    uint64_t w = load_word(p);
    const size_t take = 8 - head < len ? 8 - head : len;
    copy_tail(out, reinterpret_cast<const std::byte*>(&w) + head, take);
    out += take;
    len -= take;
    p += 8;
  }
  for (; len >= 32; len -= 32, p += 32, out += 32) {
    // One 8-byte store per loaded word: copying the four through a local array made GCC reload
    // them as 16-byte vectors, a store-forwarding stall (22% of the samples of this function).
    const uint64_t w0 = load_word(p), w1 = load_word(p + 8), w2 = load_word(p + 16),
                   w3 = load_word(p + 24);
    std::memcpy(out, &w0, 8);
    std::memcpy(out + 8, &w1, 8);
    std::memcpy(out + 16, &w2, 8);
    std::memcpy(out + 24, &w3, 8);
  }
  for (; len >= 8; len -= 8, p += 8, out += 8) {
    uint64_t w = load_word(p);
    std::memcpy(out, &w, 8);
  }
  if (len > 0) {
    uint64_t w = load_word(p);
    copy_tail(out, reinterpret_cast<const std::byte*>(&w), len);
  }
}

// Merges `take` bytes at byte `head` of the word at p with a CAS, so that the neighbouring bytes,
// which may belong to someone else, are never clobbered.
inline void write_part(std::byte* p, size_t head, const std::byte* in, size_t take) {
  auto ref = word(p);
  uint64_t old = ref.load(std::memory_order_relaxed);
  uint64_t merged;
  do {
    merged = old;
    copy_tail(reinterpret_cast<std::byte*>(&merged) + head, in, take);
  } while (!ref.compare_exchange_weak(old, merged, std::memory_order_acq_rel));
}

// Copies private memory into region memory. Partial words at either end are merged with a CAS
// (write_part); whole words are plain release stores.
inline void write(std::byte* dst, const void* src, size_t len) {
  auto* in = static_cast<const std::byte*>(src);
  const size_t head = reinterpret_cast<uintptr_t>(dst) & 7;
  std::byte* p = dst - head;
  if (head != 0 && len > 0) {
    const size_t take = 8 - head < len ? 8 - head : len;
    write_part(p, head, in, take);
    in += take;
    len -= take;
    p += 8;
  }
  for (; len >= 8; len -= 8, p += 8, in += 8) {
    uint64_t w;
    std::memcpy(&w, in, 8);
    store_word(p, w);
  }
  if (len > 0) write_part(p, 0, in, len);
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
      if (v.lock == LockWord::kFirst) {
        // A release whose lock word leads the buffer (Batch::release): the word goes last, after
        // the bytes it guards, or the next holder could lock and write while these are still
        // being stored. Batch::add checked that the verb is whole words.
        write(p + 8, static_cast<const std::byte*>(v.local) + 8, v.length - 8);
        write(p, v.local, 8);
      } else {
        write(p, v.local, v.length);  // in address order: a trailing lock word is stored last
      }
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
