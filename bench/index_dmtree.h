// `dmtree`: DMTree; its --dmtree-* flags come from
// dmtree::Options::fields(), plus the ablation step and the leaf arena capacity.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bench/spec_flags.h"
#include "indexes/dmtree/options.h"

namespace dmrt::bench {

struct DmtreeSpec {
  static constexpr std::string_view kName = "dmtree";
  static constexpr std::string_view kTitle = "DMTree";
  static constexpr std::string_view kSummary =
      "DMTree (FAST'26): FP-B+-tree with fingerprint tables and leaf locks on compute nodes";
  static constexpr bool kLocal = false;
  static constexpr bool kScan = true;
  using Options = dmtree::Options;

  // The DMTree paper's ablation (§5.4, Fig. 16) starts from the FP-B+-tree (fingerprint tables
  // and leaf locks on the memory node) and adds "RDMA Opt" (scans read only the used slot range),
  // then compute-side collaborative caching and collaborative concurrency. Here the last two are
  // one switch (`collaborative`: tables and their lock words move to the compute nodes together),
  // so --dmtree-ablation has the steps fp-btree, rdma-opt, collaborative, all; `all` adds §4.1's
  // read delegation and write combining, which is DMTree as built by default. Single switches
  // override the step, whatever their order on the line.
  struct Extras : FlagExtras<Options> {
    static constexpr const char* kSteps[] = {"fp-btree", "rdma-opt", "collaborative", "all"};
    std::string ablation;  // "" = not given
    std::optional<uint64_t> max_leaves;

    void add(CLI::App& g) {
      g.add_option("--dmtree-ablation", ablation,
                   "Ablation step (paper Fig. 16): fp-btree | rdma-opt | collaborative | all; "
                   "each step adds to the previous ones (fp-btree = the FP-B+-tree baseline, all "
                   "= DMTree)")
          ->check(CLI::IsMember({"fp-btree", "rdma-opt", "collaborative", "all"}));
      g.add_option_function<uint64_t>(
           "--dmtree-max-leaves", [this](const uint64_t& v) { max_leaves = v; },
           "Leaf arena capacity (default: sized from the expected keys)")
          ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
    }
    void preset(Options& o) const {
      if (ablation.empty()) return;
      int step = 0;
      while (ablation != kSteps[step]) ++step;
      o.scan_filter = step >= 1;
      o.collaborative = o.cached_copies = step >= 2;
      o.read_delegation = o.write_combining = step >= 3;
    }
    // Leaves are half full on average after splits: room for expected_keys with margin (a leaf
    // holds span/4 keys in the worst case we plan for). The arena is reserved at create.
    void finish(Options& o, const IndexOptions& io) const {
      if (max_leaves)
        o.max_leaves = *max_leaves;
      else if (io.expected_keys)
        o.max_leaves = io.expected_keys / std::max<uint32_t>(1, o.leaf_span / 4) + 1024;
    }
    void describe(nlohmann::json& j, const Options&) const {
      if (!ablation.empty()) j["ablation"] = ablation;
    }
  };

  static constexpr auto run = run_dmtree;  // bench/run_dmtree.cpp
  static constexpr auto byte_keys = byte_keys_dmtree;
};

}  // namespace dmrt::bench
