// FarMemoryCost: what reaching one memory node costs in shm's far-memory model (latency,
// bandwidth).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dmrt/runtime/error.h"

namespace dmrt {

// shm performs verbs on this machine's DRAM; with a cost, a round trip to the node also completes
// no earlier than `latency_ns` after it was posted plus the time its bytes spend on the node's
// link, which all clients share (dmrt/policies/shm/far_memory.h). sim and verbs ignore it: they
// have their own cost model or a real network. Zero in both fields is no model (the default).
struct FarMemoryCost {
  uint64_t latency_ns = 0;  // floor of a round trip, in ns (the whole access, DRAM included)
  double gbps = 0;          // link bandwidth in Gbit/s, per node; 0 = unlimited (no queueing)

  static constexpr uint64_t kMaxLatencyNs = 1'000'000'000;  // one second: beyond it, a typo
  static constexpr double kMaxGbps = 1e6;

  bool enabled() const { return latency_ns > 0 || gbps > 0; }
  bool operator==(const FarMemoryCost&) const = default;

  // Throws ConfigError starting with `where` when a field is out of range.
  void validate(const std::string& where) const {
    if (latency_ns > kMaxLatencyNs)
      throw ConfigError(where + ": latency of " + std::to_string(latency_ns) +
                        " ns is more than one second");
    if (!(gbps >= 0) || gbps > kMaxGbps)
      throw ConfigError(where + ": bandwidth must be in [0, 1e6] Gbit/s (0 = unlimited)");
  }

  // Named figures. "cxl": a CXL.mem expander, the same published figures as sim's `cxl` preset
  // (docs/sim.md: Pond, ASPLOS'23; Sun et al., MICRO'23): ~300 ns for a 64-byte load in all
  // (sim's 2 x 140 ns one way + 20 ns), 32 GB/s of link per device. "none": no model.
  static FarMemoryCost preset(std::string_view name) {
    if (name == "cxl") return {300, 256.0};
    if (name == "none") return {};
    throw ConfigError("unknown shm preset '" + std::string(name) + "' (choices: cxl, none)");
  }
  static constexpr std::string_view kPresetNames[] = {"cxl", "none"};  // the names preset() takes
};

}  // namespace dmrt
