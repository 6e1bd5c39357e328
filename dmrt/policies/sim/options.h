// sim::Options: the simulated cluster's shape and cost model, with named presets (preset_names()).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dmrt/policies/sim/coherence.h"

namespace dmrt::sim {

// Every figure here is a model parameter, overridable from the command line (see cli.h). The
// presets fill the cost fields with approximate published figures; docs/sim.md gives the sources
// and how uncertain each one is. Topology fields are never touched by a preset.
struct Options {
  // --- topology ---------------------------------------------------------------------------------
  unsigned compute_nodes = 1;
  unsigned clients_per_node = 1;
  unsigned memory_nodes = 1;
  uint64_t memory_bytes = uint64_t{1} << 30;    // region per memory node (memfd, touched lazily)
  uint64_t compute_bytes = uint64_t{64} << 20;  // region per compute node

  // --- cost model -------------------------------------------------------------------------------
  std::string preset_name = "rdma-cx6";  // the preset the cost fields came from (informational)
  // Per-NIC message-rate limit, millions of verbs per second. Every verb costs one "op" at the
  // NIC that posts it and one at the NIC that serves it.
  double nic_mops = 90.0;
  // Per-NIC line rate in Gbit/s, per direction (full duplex: tx and rx are separate pipes).
  double nic_gbps = 100.0;
  // A memory node's line rate where it differs from a compute node's (a pool behind a switch
  // serves several hosts' links at once); 0: nic_gbps.
  double memory_nic_gbps = 0;
  // Bytes of headers each verb adds on the wire, in each direction it carries data.
  uint32_t header_bytes = 64;
  // One-way latency between any two NICs: wire, switch, NIC pipeline and PCIe DMA at the far end.
  uint64_t latency_ns = 700;
  // Client CPU per execute() (post the work requests, poll the completion, handle the result),
  // charged when the execute() completes. Fibers add more with Endpoint::charge_cpu(ns).
  uint64_t cpu_ns = 200;
  // Extra client CPU per verb after the first in one execute() (building each work request).
  uint64_t cpu_per_verb_ns = 0;
  // Virtual time one pause() (spin backoff, message poll) costs the calling fiber.
  uint64_t poll_ns = 100;
  // Device memory (on-chip memory of the target's NIC; dmrt/runtime/address.h): the PCIe round trip
  // a NIC makes to host memory before it can answer a READ or an atomic (the DMA read; an atomic's
  // read-modify-write) is part of latency_ns; a READ or an atomic on device memory skips it, so
  // its response leaves the target this much sooner. WRITEs are posted to memory either way and
  // cost the same. docs/sim.md gives the source. Part of latency_ns: a larger value counts as
  // latency_ns.
  uint64_t pcie_rtt_ns = 400;
  // Whether the target NIC serialises atomics on one word of host memory, each holding the word
  // for its PCIe read-modify-write (pcie_rtt_ns), as real NICs do; on device memory nothing
  // waits. Off by default: the figures the indexes' READMEs quote were measured without it
  // (turning it on lowers every contended-atomic workload, e.g. ROLEX YCSB A 3.54 -> 1.07 Mops).
  bool serialize_atomics = false;
  // Whether masked CAS is one native verb (ConnectX-5+ extended atomics) or is reported as a CAS
  // loop, as the shm transport does.
  bool native_masked_cas = true;

  // --- memory-node services (dmrt/policies/sim/service.h)
  // --------------------------------------------- A service fiber is one core of its memory node.
  // Its verbs to its own node do not cross the NIC: they are applied at once and cost CPU time
  // instead (docs/sim.md gives the sources): service_access_ns per execute() of local verbs (the
  // first DRAM miss; the other accesses of the same execute() overlap it, as independent loads do),
  // plus the payload bytes at service_gbps (one core's copy bandwidth; atomics move 8 bytes).
  uint64_t service_access_ns = 100;
  double service_gbps = 80.0;
  // CPU a service spends on each message it takes from a mailbox (dequeue, return the buffer,
  // dispatch), the receiving side of a SEND that the NIC model does not charge.
  uint64_t service_msg_ns = 200;
  // A service's pause() lasts poll_ns and is then extended until its node's memory changes (a
  // remote write or atomic arrives, a message lands, another service fiber writes) or until
  // service_idle_ns have passed since the pause began: what a polling core would observe, without
  // simulating every empty poll. The cap bounds how late a service that watches the clock wakes.
  uint64_t service_idle_ns = 1000;

  // --- coherence (dmrt/policies/sim/coherence.h; docs/sim.md, "Coherence model") ----------------
  // kCoherent (default): memory is coherent and the model does not run; nothing else changes.
  // kNone / kPartial: every host reads and writes through a cache nothing keeps coherent, and
  // the verbs' FlushHints are honoured.
  Coherence coherence = Coherence::kCoherent;
  // kPartial: bytes at the start of each node's device memory that are coherent (never cached),
  // for lock words and atomics (docs/sim.md).
  uint64_t coherent_bytes = 0;
  // Each host's cache: bytes of 64 B lines (8 ways, LRU; a dirty victim is written back).
  uint64_t cache_bytes = uint64_t{1} << 20;
  // CPU a client pays per line it flushes (each line of a hinted verb, outside the coherent
  // region): issuing clflushopt / clwb and its share of the fence that waits for them.
  uint64_t flush_line_ns = 25;

  // --- simulator
  // ----------------------------------------------------------------------------------
  uint64_t seed = 1;  // reserved for randomised models; runs are deterministic
  // Test-only: nonzero, one round trip in 16 of a client (not of a service) is followed by a CPU
  // stall of up to 20 us drawn from this seed, as a client descheduled between two verbs on a
  // loaded host; runs stay deterministic. 0 (default): no stalls.
  uint64_t stall_seed = 0;
  // Test-only: nonzero, a client's or a memory-node service's verbs posted after this much virtual
  // time throw dmrt::TransportError, so that a run that cannot finish (an operation spinning on a
  // stale cached line) ends in a WorkerFailure instead of running forever, and a service spinning
  // so fails its ServiceHost::stop() instead of never returning. 0 (default): no limit.
  uint64_t watchdog_ns = 0;
  uint64_t fiber_stack_bytes = 256 * 1024;  // per simulated client
  // A NIC resource counts as saturated once some verb waited at least this long for it.
  uint64_t saturation_wait_ns = 1000;

  // The named preset's cost fields applied over the defaults (topology left at defaults).
  // Throws dmrt::ConfigError on an unknown name.
  static Options preset(std::string_view name);
  // Overwrites only the cost fields with those of the named preset.
  void apply_preset(std::string_view name);
  static std::vector<std::string> preset_names();

  unsigned clients() const { return compute_nodes * clients_per_node; }
  // Throws dmrt::ConfigError naming the bad field.
  void validate() const;
  // One line, for logs and bench output.
  std::string describe() const;
};

}  // namespace dmrt::sim
