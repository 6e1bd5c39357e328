// dmrt-bench's options of the shm transport (--shm-*, --help-transport shm): the far-memory figures
// over the cluster's, and how a round trip executes (dmrt/policies/shm/pool.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/far_memory.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt::bench {

struct ShmOptions {
  bool interleave = false;         // fibers yield after every round trip (Pool)
  std::string mode = "auto";       // round-trip execution: inline, prefetch, or auto (Pool)
  std::string coherence = "none";  // none, or flush (non-coherent CXL port; Pool)
  std::string preset;              // far-memory figures for every memory node ("" = none)
  int64_t latency_ns = -1;         // per memory node, over the preset (-1 = not given)
  double gbps = -1;                // per memory node, over the preset (-1 = not given)

  static constexpr std::string_view kSection = "shm (--transport shm)";
  static constexpr std::string_view kModes[] = {"auto", "inline", "prefetch"};
  static constexpr std::string_view kCoherence[] = {"none", "flush"};

  static constexpr auto fields() {
    using O = ShmOptions;
    return option_fields(
        option_switch("interleave", &O::interleave,
                      "shm: every client fiber yields after each round trip, as while a NIC "
                      "serves it, so the fibers of a thread interleave inside operations (for "
                      "--verify)")
            .in(kSection),
        option_text("mode", &O::mode,
                    "shm: how a round trip executes: inline (perform the verbs at once, stalling "
                    "on each cache miss), prefetch (prefetch the lines it touches, yield to the "
                    "next fiber, then perform them: misses of several fibers overlap), or auto "
                    "(prefetch with a far-memory model, inline without; as measured in "
                    "docs/bench.md)",
                    kModes)
            .in(kSection),
        option_text("coherence", &O::coherence,
                    "shm: none, or flush: around every verb to another node, the cache-line "
                    "flushes and fences a port to non-coherent shared CXL memory must issue "
                    "(invalidate before reads, write back and fence after writes; "
                    "docs/cxl-porting.md)",
                    kCoherence)
            .in(kSection),
        option_text("preset", &O::preset,
                    "shm: far-memory figures for every memory node: cxl (300 ns, 256 Gbit/s, the "
                    "figures of sim's cxl preset) or none; --shm-latency-ns and --shm-gbps "
                    "override it",
                    FarMemoryCost::kPresetNames)
            .in(kSection),
        option_number("latency_ns", &O::latency_ns,
                      "shm: a round trip to a memory node completes no earlier than this many ns "
                      "after it was posted (plus its link time with --shm-gbps); the fiber "
                      "yields meanwhile. Over the cluster file's shm_latency_ns",
                      0, static_cast<int64_t>(FarMemoryCost::kMaxLatencyNs))
            .no_default()
            .in(kSection),
        option_number("gbps", &O::gbps,
                      "shm: link bandwidth of each memory node in Gbit/s, shared by all clients "
                      "(round trips queue for it; 0 = unlimited). Over the cluster file's "
                      "shm_gbps",
                      0.0, FarMemoryCost::kMaxGbps)
            .no_default()
            .in(kSection));
  }

  // The far-memory flags, over what the cluster (file) gives every memory node.
  void apply_far_flags(ClusterConfig& config) const {
    for (NodeId n : config.memory_nodes()) {
      FarMemoryCost& far = config.nodes[n].far;
      if (!preset.empty()) far = FarMemoryCost::preset(preset);
      if (latency_ns >= 0) far.latency_ns = static_cast<uint64_t>(latency_ns);
      if (gbps >= 0) far.gbps = gbps;
    }
  }
};

}  // namespace dmrt::bench
