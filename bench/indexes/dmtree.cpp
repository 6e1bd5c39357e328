// dmrt-bench's DMTree (dmrt/indexes/dmtree): its --dmtree-* flags (dmtree::Options::fields(), plus
// the ablation step and the leaf arena), registered for every transport compiled in.
#include <algorithm>
#include <cstdint>
#include <string>

#include "bench/indexes/register.h"
#include "dmrt/indexes/dmtree/dmtree.h"

namespace dmrt::bench {
namespace {

// The DMTree paper's ablation (§5.4, Fig. 16) starts from the FP-B+-tree (fingerprint tables
// and leaf locks on the memory node) and adds "RDMA Opt" (scans read only the used slot range),
// then compute-side collaborative caching and collaborative concurrency. Here the last two are
// one switch (`collaborative`: tables and their lock words move to the compute nodes together),
// so --dmtree-ablation has the steps fp-btree, rdma-opt, collaborative, all; `all` adds §4.1's
// read delegation and write combining, which is DMTree as built by default. Single switches
// override the step, whatever their order on the line.
struct DmtreeExtras : FlagExtras<dmtree::Options> {
  static constexpr const char* kSteps[] = {"fp-btree", "rdma-opt", "collaborative", "all"};
  std::string ablation;     // "" = not given
  uint64_t max_leaves = 0;  // --dmtree-max-leaves, when given

  void declare(FlagList& l) {
    l.choice("--dmtree-ablation", ablation, {kSteps, kSteps + 4},
             "Ablation step (paper Fig. 16): fp-btree | rdma-opt | collaborative | all; each "
             "step adds to the previous ones (fp-btree = the FP-B+-tree baseline, all = DMTree)");
    l.number("--dmtree-max-leaves", max_leaves,
             "Leaf arena capacity (default: sized from the expected keys)", uint64_t{1},
             uint64_t{1} << 40)
        .shown_default.reset();
  }
  void preset(dmtree::Options& o) const {
    if (ablation.empty()) return;
    int step = 0;
    while (ablation != kSteps[step]) ++step;
    o.scan_filter = step >= 1;
    o.collaborative = o.cached_copies = step >= 2;
    o.read_delegation = o.write_combining = step >= 3;
  }
  // Leaves are half full on average after splits: room for expected_keys with margin (a leaf
  // holds span/4 keys in the worst case we plan for). The arena is reserved at create.
  void finish(dmtree::Options& o, const IndexOptions& io, const FlagList& given) const {
    if (given.given("--dmtree-max-leaves"))
      o.max_leaves = max_leaves;
    else if (io.expected_keys)
      o.max_leaves = io.expected_keys / std::max<uint32_t>(1, o.leaf_span / 4) + 1024;
  }
  void describe(nlohmann::json& j, const dmtree::Options&) const {
    if (!ablation.empty()) j["ablation"] = ablation;
  }
};

const RegisterDm<TreeRun<dmtree::Options, dmtree::Index>, DmtreeExtras> kDmtree{
    {"dmtree", "DMTree",
     "DMTree (FAST'26): FP-B+-tree with fingerprint tables and leaf locks on compute nodes", 60}};

}  // namespace
}  // namespace dmrt::bench
