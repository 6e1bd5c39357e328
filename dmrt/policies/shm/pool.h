// Pool: every node region of a cluster as shared memory (memfd, named shm, or a device or file
// the user names), mapped here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dmrt/policies/shm/coherence.h"
#include "dmrt/policies/shm/execution.h"
#include "dmrt/policies/shm/far_memory.h"
#include "dmrt/policies/shm/source.h"
#include "dmrt/runtime/cluster.h"

namespace dmrt::shm {

struct Region {
  std::byte* base = nullptr;
  uint64_t bytes = 0;
  NodeRole role = NodeRole::kMemory;
};

// Owns the mappings. An anonymous pool (no name) lives in memfds of this process; a named pool
// is created with shm_open under /dev/shm/dmrt.<name>.<node> so that other processes can attach,
// and is unlinked when its creator goes away. A pool from a path (PoolSource, dmrt/policies/shm/
// source.h) lies whole in one device or file: node n's region at offset(n), each region and
// device memory starting on a kSourceAlign boundary after the one before (region, then its
// device memory, node by node), so the regions' own headers are the layout an attacher reads.
class Pool {
 public:
  static std::shared_ptr<Pool> create(const ClusterConfig& config, const std::string& name = "");
  // Attaches to a named pool created by another process; throws ConfigError if there is none.
  static std::shared_ptr<Pool> attach(const std::string& name);
  // A pool on a device or file (source.path; an empty path is create(config)). The file is made
  // if it does not exist and grown if it is smaller than source_bytes_needed(config); a device
  // must already be that large. What was there is cleared (node 0's magic word first, so that a
  // process attaching meanwhile waits). source.numa_node binds the whole mapping (mbind); a
  // node's NodeSpec::numa_node binds its region. The pool's waits poll (polling_waits()).
  // Its creator clears node 0's magic word when it goes away; the device or file stays.
  static std::shared_ptr<Pool> create(const ClusterConfig& config, const PoolSource& source);
  // Attaches to the pool another process created on source.path, from the regions' headers;
  // every header word is checked against what the device or file really holds (its sysfs size or
  // fstat) before it sizes anything. With `expect`, a pool of another geometry (node count,
  // roles, region and device-memory sizes, mailboxes) is refused. ConfigError when there is no
  // pool there yet: its text then says "no pool named", "is not initialised" or "still being
  // created", as attach(name)'s does, for callers that wait.
  static std::shared_ptr<Pool> attach(const PoolSource& source,
                                      const ClusterConfig* expect = nullptr);
  // Bytes a pool of `config` takes on a device or file (create(config, source)).
  static uint64_t source_bytes_needed(const ClusterConfig& config);
  static constexpr uint64_t kSourceAlign = uint64_t{2} << 20;  // devdax's usual alignment
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  const ClusterConfig& config() const { return config_; }
  size_t node_count() const { return regions_.size(); }
  const Region& region(NodeId n) const { return regions_[n]; }
  // Node n's device memory (dmrt/runtime/address.h): on shm, plain shared memory of its own (a
  // memfd, or /dev/shm/dmrt.<name>.<node>.dm), zeroed at creation; bytes 0 when the node has none.
  const Region& device_region(NodeId n) const { return device_[n]; }
  // The region a verb on `a` lands in: the host region, or the device memory.
  const Region& region_of(GlobalAddress a) const {
    return a.in_device_memory() ? device_[a.node()] : regions_[a.node()];
  }
  // The pool's name, or its path for a pool from a device or file.
  const std::string& name() const { return name_; }
  bool owner() const { return owner_; }
  // True for a pool from a device or file: its processes may be on several hosts, so a thread
  // whose fibers only wait polls with a bounded backoff instead of sleeping on a futex, and a
  // sender rings no bell (dmrt/policies/shm/idle.h, IdleThread::pause_polling).
  bool polling_waits() const { return polling_; }
  // Which device or file, NUMA node and kernel path serve the pool (dmrt/policies/shm/source.h),
  // with a sample of where its pages are now.
  PoolProvenance provenance() const;
  // Bytes handed out by the allocator so far on node n (bump word minus heap start).
  uint64_t heap_used(NodeId n) const;
  // The pages the node regions are on: "thp" (an anonymous pool in private memory with
  // MADV_HUGEPAGE: transparent 2 MiB pages where the kernel finds them) or "4k" (shared memory
  // objects; huge only if the host's shmem THP setting makes them so). huge_page_bytes() says how
  // much of the regions the kernel actually put on huge pages (/proc/self/smaps), for reports.
  const std::string& pages() const { return pages_; }
  uint64_t huge_page_bytes() const;
  static bool anonymous_thp_available();
  // True when regions were bound to NUMA nodes as the config asked.
  bool numa_bound() const { return numa_bound_; }
  // What a round trip does beyond performing its verbs inline, as bits of one byte that every
  // round trip reads: 0, the plain path, costs one predictable branch. Test hooks (the first two),
  // the execution mode and the far-memory model. Set them before clients run.
  enum RoundTripHook : uint8_t {
    kYieldPerRoundTrip = 1,
    kTornReads = 2,
    kPrefetch = 4,    // set_execution(Execution::kPrefetch)
    kFarMemory = 8,   // some node has a FarMemoryCost (far_memory())
    kCoherence = 16,  // set_coherence(Coherence::kFlush)
    kJitter = 32,     // set_round_trip_jitter (fault_injection builds)
  };
  uint8_t round_trip_hooks() const { return hooks_; }
  // Inline (the default) or prefetch (dmrt/policies/shm/execution.h). The bench picks its own
  // default (docs/bench.md); the library keeps inline, which the tests' interleavings are written
  // for.
  void set_execution(Execution e) { set_hook(kPrefetch, e == Execution::kPrefetch); }
  Execution execution() const {
    return (hooks_ & kPrefetch) ? Execution::kPrefetch : Execution::kInline;
  }
  // None (the default) or flush: the cache-line flushes and fences a port to non-coherent shared
  // CXL memory issues around each verb (dmrt/policies/shm/coherence.h). Set before clients run.
  void set_coherence(Coherence c) {
    if (c == Coherence::kFlush) flush_ = FlushInstructions::detect();
    set_hook(kCoherence, c == Coherence::kFlush);
  }
  Coherence coherence() const {
    return (hooks_ & kCoherence) ? Coherence::kFlush : Coherence::kNone;
  }
  const FlushInstructions& flush_instructions() const { return flush_; }
  CoherenceStats& coherence_stats() const { return *coherence_stats_; }
  // The far-memory model of the nodes the config gives a cost (NodeSpec::far); null when none
  // has one. Only the creating process models costs: a pool attached by name has none.
  FarMemory* far_memory() const { return far_.get(); }
  // Makes this process model the far-memory costs `config` gives its nodes (NodeSpec::far; the
  // pool's own config with costs set): what create() does, for a pool attached by name. The
  // links are this process's: processes attached to one pool do not queue behind each other.
  // Before clients run; nothing when no node has a cost.
  void model_far_memory(const ClusterConfig& config);
  // Off (the default), a round trip completes inline, as a CXL load does, and the fibers of one
  // thread interleave only where they pause. On, every client fiber yields after each round trip,
  // as it would while a NIC serves it, so they interleave inside operations too: what the
  // concurrency tests want on a 2-core machine.
  void set_yield_per_round_trip(bool on) { set_hook(kYieldPerRoundTrip, on); }
  bool yield_per_round_trip() const { return hooks_ & kYieldPerRoundTrip; }
#ifdef DMRT_FAULT_INJECTION
  // Test-only (fault_injection builds). On, a READ that spans more than one word is performed in
  // two pieces split at a word boundary, with a fiber yield between them, so that the other
  // fibers of the thread (writers) run in the middle: the reader's copy is torn, deterministically
  // and often, as an RDMA READ racing a WRITE may be (never inside a word; RDMA promises no order
  // in which the responder reads the words of one READ, so either piece may go first). The split
  // and the order vary from READ to READ (shm::Endpoint). Verb, round-trip and byte counts are
  // those of the whole READ.
  void set_torn_reads(bool on) {
    set_hook(kTornReads, on);
  }
  // Test-only (fault_injection builds). Before each round trip a client fiber yields 0 to
  // max_yields times (a sequence per client), so that one thread's operations overlap by uneven
  // amounts, as round trips of uneven latency make them on a NIC: a fiber between two steps of a
  // protocol may wait while another completes several operations. 0 turns it off.
  void set_round_trip_jitter(unsigned max_yields) {
    jitter_ = max_yields;
    set_hook(kJitter, max_yields != 0);
  }
  unsigned round_trip_jitter() const {
    return jitter_;
  }
#endif

 private:
  Pool() = default;
  void map_node(NodeId n, int fd, uint64_t bytes, NodeRole role);
  void map_device(NodeId n, int fd, uint64_t bytes);
  static std::byte* map_anonymous_huge(uint64_t bytes);
  // attach's checks of every header, whatever maps the regions: `map_region(n)` maps node n's
  // region into regions_[n] (bytes from what really holds it), `map_device(n, dm)` its device
  // memory of the `dm` bytes its header says.
  static void attach_regions(Pool& pool, const std::function<void(size_t)>& map_region,
                             const std::function<void(size_t, uint64_t)>& map_device);
  void set_hook(RoundTripHook h, bool on) {
    hooks_ = static_cast<uint8_t>(on ? hooks_ | h : hooks_ & ~h);
  }
  ClusterConfig config_;
  std::vector<Region> regions_;
  std::vector<Region> device_;  // by node; bytes 0 = none
  std::string name_;
  bool owner_ = false;
  bool numa_bound_ = false;
  bool polling_ = false;              // a pool from a path (polling_waits)
  std::byte* source_base_ = nullptr;  // a pool from a path: its one mapping
  uint64_t source_map_bytes_ = 0;
  PoolProvenance prov_;  // what provenance() reports, less the page sample
  std::string pages_ = "4k";
  uint8_t hooks_ = 0;    // RoundTripHook bits; present in every build so the layout never varies
  unsigned jitter_ = 0;  // set_round_trip_jitter
  std::unique_ptr<FarMemory> far_;
  FlushInstructions flush_;
  std::unique_ptr<CoherenceStats> coherence_stats_ = std::make_unique<CoherenceStats>();
};

std::string shm_object_name(const std::string& pool, NodeId node);

}  // namespace dmrt::shm
