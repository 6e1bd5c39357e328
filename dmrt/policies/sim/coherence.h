// sim's coherence model: hosts that cache pooled lines without keeping them coherent (CXL 2.0
// shared between hosts), so that an index's flush points (FlushHint on its verbs) can be proved
// needed and sufficient. docs/sim.md, "Coherence model".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/verbs.h"

namespace dmrt::sim {

// kCoherent (default): memory is coherent, as RDMA's is; hints are ignored and nothing of the
// model runs. kNone: every host (a compute node's clients, a memory node's services) reads and
// writes through a cache of its own that nothing keeps coherent (HostCaches below). kPartial: as
// kNone, except for the first Options::coherent_bytes of each node's device memory, which is
// never cached (the coherent region Pasha, Tigon and Megalon assume for lock words and atomics).
enum class Coherence : uint8_t { kCoherent, kNone, kPartial };

constexpr std::string_view coherence_name(Coherence c) {
  switch (c) {
    case Coherence::kCoherent:
      return "coherent";
    case Coherence::kNone:
      return "none";
    case Coherence::kPartial:
      return "partial";
  }
  return "?";
}
// Throws dmrt::ConfigError on an unknown name.
Coherence parse_coherence(std::string_view name);

// What the model did since the last reset. Lines are 64 B.
struct CoherenceCounters {
  uint64_t lines_invalidated = 0;   // lines of hinted READs (FlushHint::kInvalidate)
  uint64_t lines_written_back = 0;  // lines of hinted WRITEs (FlushHint::kWriteBack)
  uint64_t flush_ps = 0;            // CPU time those flushes cost their clients (ps)
  uint64_t stale_lines = 0;         // lines a READ took from a cache that differed from memory
  uint64_t evicted_dirty = 0;       // dirty lines a full cache set wrote back to make room
};

// The hosts' caches under Coherence::kNone / kPartial. Each host has a set-associative cache of
// cache_bytes (8 ways, LRU) holding what it read and wrote, line by line:
//  - a READ takes each line from the host's cache where present (possibly stale) and fills the
//    cache from memory where not; with kInvalidate the host's copies are dropped first (a dirty
//    one written back), so the READ sees memory;
//  - a WRITE lands in the host's cache (a missing line is first filled from memory) and marks
//    its bytes dirty: other hosts cannot see them until they are written back, by a kWriteBack
//    hint on that verb or a later one to the same line (the line's every dirty byte), a kInvalidate
//    READ of the line, or an eviction. A write-back writes the dirty bytes only (byte enables):
//    the model never clobbers bytes a host did not store;
//  - atomics (CAS, masked CAS, FAA) execute at memory, as a device must execute them for a port
//    to be correct at all (docs/cxl-porting.md): they see and change memory, never a cache, and
//    leave any host's cached copy of their line as it was (stale);
//  - the lock word of a release (Batch::release) is stored at memory too, where the CAS that took
//    the lock acts; its other bytes are an ordinary WRITE and, with kWriteBack, are written back
//    before the lock word lands.
// Untimed accesses (setup before a run) bypass the caches: memory as an outside observer sees it.
class HostCaches {
 public:
  // `line` returns the memory of the 64 B line at a line-aligned address; `coherent` whether an
  // address is in the coherent region (never cached).
  HostCaches(size_t hosts, uint64_t cache_bytes, std::function<std::byte*(GlobalAddress)> line,
             std::function<bool(GlobalAddress)> coherent);

  // Performs READ / WRITE `v` issued by `host`; `mem` is the memory of v.remote.
  void read(NodeId host, const Verb& v);
  void write(NodeId host, const Verb& v);
  // Lines of `v` its hints ask to flush, outside the coherent region: {invalidate, write back}.
  std::pair<uint64_t, uint64_t> hinted_lines(const Verb& v) const;
  bool coherent(GlobalAddress a) const { return coherent_(a); }

 private:
  struct Line {
    uint64_t tag = 0;    // line address + 1 (0: empty)
    uint64_t dirty = 0;  // bit i: byte i written and not yet written back
    uint64_t used = 0;   // LRU stamp
    std::byte data[64];
  };
  static constexpr unsigned kWays = 8;

  Line* find(NodeId host, uint64_t line_addr);
  Line& fill(NodeId host, uint64_t line_addr);  // find, else take the set's LRU way and load it
  void write_back(Line& l);
  void drop(NodeId host, uint64_t line_addr);

  std::vector<Line> lines_;  // hosts x sets x kWays
  uint64_t sets_ = 0;        // per host, a power of two
  uint64_t clock_ = 0;
  std::function<std::byte*(GlobalAddress)> line_;
  std::function<bool(GlobalAddress)> coherent_;

 public:
  CoherenceCounters counters;
};

}  // namespace dmrt::sim
