// FarMemory: shm's cost model for far memory: when a round trip to a memory node may complete.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/verbs.h"

namespace dmrt::shm {

// Real code runs on real memory (the complement of sim, which models the CPU in virtual time):
// the model only says how long a round trip must at least take. Each memory node with a
// FarMemoryCost has one link, shared by every client of this process. A round trip posted at `t`
// occupies the link for its bytes x 8 / gbps, first come first served, from max(t, the end of the
// link's previous occupation); it completes no earlier than the end of that occupation plus
// latency_ns. Without bandwidth (gbps 0) there is no queue: t + latency_ns. The waiting itself is
// the Endpoint's (it yields to the other fibers of its thread until then).
//
// Time is the transport clock (shm::Endpoint::now_ns, steady_clock nanoseconds). Links keep
// picoseconds since `epoch_ns` so that fractions of a nanosecond per line add up exactly.
class FarMemory {
 public:
  // What one link has carried since the model was made (links with bandwidth only: a link
  // without queueing keeps no shared state, so that the model costs no cache-line transfers).
  struct LinkStats {
    uint64_t round_trips = 0;
    uint64_t bytes = 0;
    uint64_t busy_ps = 0;    // link occupation, summed
    uint64_t queued_ps = 0;  // time round trips waited for the link, summed
  };

  FarMemory(const ClusterConfig& config, uint64_t epoch_ns) : epoch_ns_(epoch_ns) {
    links_ = std::make_unique<Link[]>(config.size());
    nodes_ = config.size();
    for (size_t n = 0; n < config.size(); ++n) {
      const FarMemoryCost& c = config.nodes[n].far;
      c.validate("node " + std::to_string(n));
      Link& l = links_[n];
      l.cost = c;
      l.on = c.enabled();
      l.latency_ps = c.latency_ns * 1000;
      l.ps_per_byte = c.gbps > 0 ? 8000.0 / c.gbps : 0;
    }
  }
  FarMemory(const FarMemory&) = delete;
  FarMemory& operator=(const FarMemory&) = delete;

  // True when some node has a cost.
  static bool any(const ClusterConfig& config) {
    return std::any_of(config.nodes.begin(), config.nodes.end(),
                       [](const NodeSpec& n) { return n.far.enabled(); });
  }

  bool models(NodeId n) const { return n < nodes_ && links_[n].on; }
  const FarMemoryCost& cost(NodeId n) const { return links_[n].cost; }
  uint64_t epoch_ns() const { return epoch_ns_; }

  // Posts a round trip of `bytes` link bytes to node n (which models() must accept) at `now_ns`;
  // returns the earliest transport-clock time at which it may complete.
  uint64_t post(NodeId n, uint64_t now_ns, uint64_t bytes) {
    Link& l = links_[n];
    uint64_t now_ps = now_ns > epoch_ns_ ? (now_ns - epoch_ns_) * 1000 : 0;
    uint64_t done_ps = now_ps;
    if (l.ps_per_byte > 0) {
      auto xfer = static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) * l.ps_per_byte));
      uint64_t busy = l.busy_until_ps.load(std::memory_order_relaxed);
      uint64_t start;
      do {
        start = std::max(now_ps, busy);
      } while (
          !l.busy_until_ps.compare_exchange_weak(busy, start + xfer, std::memory_order_relaxed));
      done_ps = start + xfer;
      // The link's cache line is this thread's after the CAS: the figures cost little more.
      l.round_trips.fetch_add(1, std::memory_order_relaxed);
      l.bytes.fetch_add(bytes, std::memory_order_relaxed);
      l.busy_ps.fetch_add(xfer, std::memory_order_relaxed);
      l.queued_ps.fetch_add(start - now_ps, std::memory_order_relaxed);
    }
    return epoch_ns_ + (done_ps + l.latency_ps + 999) / 1000;
  }

  LinkStats stats(NodeId n) const {
    const Link& l = links_[n];
    return {l.round_trips.load(std::memory_order_relaxed), l.bytes.load(std::memory_order_relaxed),
            l.busy_ps.load(std::memory_order_relaxed), l.queued_ps.load(std::memory_order_relaxed)};
  }

  // Bytes a batch puts on the link: CXL.mem moves whole 64-byte lines, so each verb counts the
  // lines it touches (an 8-byte atomic: one line).
  static uint64_t link_bytes(const Batch& b) {
    uint64_t lines = 0;
    for (const Verb& v : b.verbs()) lines += lines_touched(v.remote.offset(), v.length);
    return lines * 64;
  }
  static uint64_t lines_touched(uint64_t offset, uint64_t length) {
    if (length == 0) return 0;
    return (offset + length - 1) / 64 - offset / 64 + 1;
  }

 private:
  struct alignas(64) Link {
    std::atomic<uint64_t> busy_until_ps{0};  // the link is occupied until then
    std::atomic<uint64_t> round_trips{0}, bytes{0}, busy_ps{0}, queued_ps{0};
    FarMemoryCost cost;
    bool on = false;
    uint64_t latency_ps = 0;
    double ps_per_byte = 0;  // 0: unlimited bandwidth, no link state
  };

  std::unique_ptr<Link[]> links_;
  size_t nodes_ = 0;
  uint64_t epoch_ns_;
};

}  // namespace dmrt::shm
