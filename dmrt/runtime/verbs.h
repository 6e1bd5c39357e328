// The one-sided verb set (READ, WRITE, CAS, masked CAS, FAA) and Batch: ordered verbs to one node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/error.h"

namespace dmrt {

enum class VerbKind : uint8_t { kRead, kWrite, kCas, kMaskedCas, kFaa };
inline constexpr size_t kVerbKinds = 5;

constexpr std::string_view verb_name(VerbKind k) {
  switch (k) {
    case VerbKind::kRead:
      return "read";
    case VerbKind::kWrite:
      return "write";
    case VerbKind::kCas:
      return "cas";
    case VerbKind::kMaskedCas:
      return "masked_cas";
    case VerbKind::kFaa:
      return "faa";
  }
  return "?";
}

// Which word of a lock-releasing WRITE (Batch::release) is the lock: none for a plain WRITE.
enum class LockWord : uint8_t { kNone, kLast, kFirst };

// Coherence hints: where a port to memory that hosts cache without keeping coherent (CXL 2.0
// pooled between hosts; docs/cxl-porting.md, "Coherence") must flush. A bit set of FlushHint.
// Transports whose memory is coherent ignore them; the sim's coherence model (sim::Coherence)
// honours them, so that a test can prove each one needed. They change no result where honoured
// correctly and cost nothing where ignored.
enum class FlushHint : uint8_t {
  kNone = 0,
  // READ: the issuing host drops its cached copies of the lines first (a dirty one is written
  // back before), so the READ sees what memory holds (clflushopt + mfence).
  kInvalidate = 1,
  // WRITE: the lines written are written back to memory as part of the verb, before any later
  // verb of the batch lands (clwb + sfence). A release's lock word lands after them.
  kWriteBack = 2,
};
constexpr FlushHint operator|(FlushHint a, FlushHint b) {
  return static_cast<FlushHint>(static_cast<uint8_t>(a) | static_cast<uint8_t>(b));
}
constexpr bool has_hint(FlushHint set, FlushHint h) {
  return (static_cast<uint8_t>(set) & static_cast<uint8_t>(h)) != 0;
}

// One work request. Atomics act on one naturally aligned 8-byte word and return the prior value
// through `result` (may be null when the caller does not need it).
struct Verb {
  VerbKind kind = VerbKind::kRead;
  LockWord lock = LockWord::kNone;    // WRITE: the word that releases a lock (Batch::release)
  FlushHint hint = FlushHint::kNone;  // where a non-coherent port flushes (Batch::hint)
  uint32_t length = 0;                // bytes moved (8 for atomics)
  GlobalAddress remote;
  void* local = nullptr;          // READ destination, WRITE source
  uint64_t* result = nullptr;     // atomics: value found at `remote` before the verb
  uint64_t compare = 0;           // CAS / masked CAS: expected value
  uint64_t swap = 0;              // CAS / masked CAS: new value; FAA: addend
  uint64_t compare_mask = ~0ull;  // masked CAS: bits that take part in the comparison
  uint64_t swap_mask = ~0ull;     // masked CAS: bits that are replaced on success

  bool is_atomic() const { return kind >= VerbKind::kCas; }
};
static_assert(sizeof(Verb) == 64, "the hint lives in padding: a Verb stays one cache line");

// Semantics shared by every transport. Masked CAS follows the mlx5 extended atomic: succeeds when
// the masked bits equal, then replaces only the swap-masked bits. Plain CAS is the all-ones case.
constexpr bool masked_cas_matches(uint64_t old, uint64_t compare, uint64_t compare_mask) {
  return ((old ^ compare) & compare_mask) == 0;
}
constexpr uint64_t masked_cas_result(uint64_t old, uint64_t swap, uint64_t swap_mask) {
  return (old & ~swap_mask) | (swap & swap_mask);
}

// Ordered verbs to a single node: posted with one doorbell, completed as one round trip. Later
// verbs observe the effects of earlier ones (RC ordering). Storage is inline so that building a
// batch on the hot path never allocates.
class Batch {
 public:
  static constexpr size_t kMaxVerbs = 32;

  // User-provided, so that even a value-initialised Batch (Batch{}, std::vector<Batch>(n)) leaves
  // the slots alone: see slots_.
  Batch() {}

  // Builders return *this so that a batch reads as the verb list it posts.
  Batch& read(GlobalAddress src, void* dst, uint32_t len) {
    return add({VerbKind::kRead, LockWord::kNone, FlushHint::kNone, len, src, dst, nullptr});
  }
  Batch& write(GlobalAddress dst, const void* src, uint32_t len) {
    return add({VerbKind::kWrite, LockWord::kNone, FlushHint::kNone, len, dst,
                const_cast<void*>(src), nullptr});
  }
  // A WRITE whose last (or first) 8-byte word releases, or hands on, a lock that other clients
  // take with CAS: the other bytes land first, and the lock word lands atomically with respect
  // to concurrent atomics on it. Counted as a WRITE. A trailing lock word (kLast) is an ordinary
  // WRITE where WRITEs land in address order (shm, sim, a NIC: the papers' assumption); a leading
  // one (kFirst) is stored after the rest (shm, sim: two stores; a NIC: two WRITEs, the word's
  // last), never first. Verbs on a software device (rxe, siw), whose failing CAS writes the old
  // word back unguarded, and a CPU store to a word that NIC atomics target (a local batch) store
  // the word with an atomic instead (docs/rdma-cluster.md, "Lock releases on Soft-RoCE"). `len`
  // is a multiple of 8, at least 8, and the lock word is naturally aligned.
  Batch& release(GlobalAddress dst, const void* src, uint32_t len, LockWord at = LockWord::kLast) {
    return add({VerbKind::kWrite, at, FlushHint::kNone, len, dst, const_cast<void*>(src), nullptr});
  }
  Batch& cas(GlobalAddress word, uint64_t expected, uint64_t desired, uint64_t* old = nullptr) {
    return add({VerbKind::kCas, LockWord::kNone, FlushHint::kNone, 8, word, nullptr, old, expected,
                desired});
  }
  Batch& masked_cas(GlobalAddress word, uint64_t compare, uint64_t compare_mask, uint64_t swap,
                    uint64_t swap_mask, uint64_t* old = nullptr) {
    return add({VerbKind::kMaskedCas, LockWord::kNone, FlushHint::kNone, 8, word, nullptr, old,
                compare, swap, compare_mask, swap_mask});
  }
  Batch& faa(GlobalAddress word, uint64_t add_value, uint64_t* old = nullptr) {
    return add(
        {VerbKind::kFaa, LockWord::kNone, FlushHint::kNone, 8, word, nullptr, old, 0, add_value});
  }

  // Sets the coherence hint of the verb added last (FlushHint): `b.read(a, p, n).hint(h)`.
  Batch& hint(FlushHint h) {
    if (size_ > 0) verbs_[size_ - 1].hint = verbs_[size_ - 1].hint | h;
    return *this;
  }

  // Inlined into every builder: the checks are two compares, their messages out of line.
  Batch& add(const Verb& v) {
    const NodeId n = v.remote.node();
    if (size_ == kMaxVerbs || (size_ > 0 && n != node_) ||
        ((v.is_atomic() || v.lock != LockWord::kNone) &&
         (((v.remote.offset() | v.length) & 7) != 0 || v.length < 8))) [[unlikely]]
      refuse(v);
    node_ = n;
    verbs_[size_++] = v;
    return *this;
  }

  NodeId node() const { return size_ ? node_ : GlobalAddress{}.node(); }
  // Only READs and WRITEs: data moved, no atomic.
  bool data_only() const {
    for (size_t i = 0; i < size_; ++i)
      if (verbs_[i].is_atomic()) return false;
    return !empty();
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() {
    size_ = 0;
    local_ = false;
  }
  // Set by Client::run for every batch it posts (local_access() below): the transports perform a
  // local batch with the CPU instead of the network path.
  bool local() const { return local_; }
  void set_local(bool l) { local_ = l; }
  std::span<Verb> verbs() { return {verbs_, size_}; }
  std::span<const Verb> verbs() const { return {verbs_, size_}; }
  Verb& operator[](size_t i) { return verbs_[i]; }
  const Verb& operator[](size_t i) const { return verbs_[i]; }

 private:
  [[noreturn, gnu::cold, gnu::noinline]] void refuse(const Verb& v) const {
    if (size_ == kMaxVerbs) throw LimitError("a Batch holds at most 32 verbs; split it in two");
    if (size_ > 0 && v.remote.node() != node_)
      throw AddressError("a Batch targets one node; verb to node " +
                         std::to_string(v.remote.node()) + " after node " + std::to_string(node_));
    if (v.lock != LockWord::kNone)
      throw AddressError("lock release of " + std::to_string(v.length) + " bytes at " +
                         v.remote.to_string() + ": its lock word must be whole and aligned");
    throw AddressError("atomic verb on unaligned address " + v.remote.to_string());
  }

  // Slots past size_ stay uninitialised (add() assigns them). Operations build their batches on
  // the stack, often several per round trip; constructing all 32 verbs (2 KiB) every time cost
  // more than the verbs carried (the sim profile of RACE searches, docs/sim.md "Speed").
  union {
    Verb verbs_[kMaxVerbs];
  };
  size_t size_ = 0;
  NodeId node_ = 0;  // every verb's node (add() checks it without reading a slot)
  bool local_ = false;
};

// A client's access to its own node's memory is local, not a round trip (DMTree reads its
// fingerprint tables so): batch i of a posted group is performed with the CPU's loads and stores
// on every transport, and counted as a local access, when it targets the client's home node and
// moves data only. Client::run decides once per batch and marks it (Batch::local()). Atomics keep
// the network path, where they are atomic with other nodes' verbs; while a group holds an atomic
// batch to the home node, its other batches to the home node keep the network path too, so that the
// group's order to that node holds.
//
// Device memory (dmrt/runtime/address.h) is on the NIC, out of the CPU's reach: a batch that
// touches it keeps the network path, and, like an atomic batch, keeps the group's other batches to
// the home node on it too.
inline bool local_access(std::span<const Batch> group, size_t i, NodeId home) {
  auto cpu_reachable = [](const Batch& b) {
    if (!b.data_only()) return false;
    for (const Verb& v : b.verbs())
      if (v.remote.in_device_memory()) return false;
    return true;
  };
  const Batch& b = group[i];
  if (b.empty() || b.node() != home || !cpu_reachable(b)) return false;
  for (const Batch& o : group)
    if (!o.empty() && o.node() == home && !cpu_reachable(o)) return false;
  return true;
}

}  // namespace dmrt
