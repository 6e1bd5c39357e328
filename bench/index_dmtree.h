// `dmtree`: DMTree, one Tree per compute node, its ablation switches as --dmtree-* flags.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bench/adapter.h"
#include "bench/per_node.h"
#include "indexes/dmtree/options.h"
#include "indexes/dmtree/tree.h"
#include "runtime/client.h"
#include "runtime/kv.h"

namespace dmrt::bench {

// The DMTree paper's ablation (§5.4, Fig. 16) starts from the FP-B+-tree (fingerprint tables and
// leaf locks on the memory node) and adds "RDMA Opt" (scans read only the used slot range), then
// compute-side collaborative caching and collaborative concurrency. Here the last two are one
// switch (`collaborative`: tables and their lock words move to the compute nodes together), so
// --dmtree-ablation has the steps fp-btree, rdma-opt, collaborative, all; `all` adds §4.1's read
// delegation and write combining, which is DMTree as built by default. Single switches override
// the step, whatever their order on the line.
struct DmtreeFlags {
  static constexpr std::string_view kIndex = "dmtree";
  static constexpr std::string_view kTitle = "DMTree";
  static constexpr const char* kSteps[] = {"fp-btree", "rdma-opt", "collaborative", "all"};

  dmtree::Options base;
  std::string ablation;  // "" = not given
  std::optional<bool> collaborative, cached_copies, scan_filter, read_delegation, write_combining;
  std::optional<uint64_t> max_leaves;

  void add(CLI::App& g) {
    g.add_option(
         "--dmtree-ablation", ablation,
         "Ablation step (paper Fig. 16): fp-btree | rdma-opt | collaborative | all; each "
         "step adds to the previous ones (fp-btree = the FP-B+-tree baseline, all = DMTree)")
        ->check(CLI::IsMember({"fp-btree", "rdma-opt", "collaborative", "all"}));
    auto sw = [&g](const std::string& name, std::optional<bool>& slot, const std::string& help) {
      g.add_option_function<bool>(
           name, [&slot](const bool& v) { slot = v; }, help)
          ->type_name("on|off")
          ->default_str("on");
    };
    sw("--dmtree-collaborative", collaborative,
       "Fingerprint tables and leaf locks on the compute nodes (off: the FP-B+-tree baseline, all "
       "on the memory node)");
    sw("--dmtree-cached-copies", cached_copies,
       "Keep copies of peers' fingerprint tables (collaborative only)");
    sw("--dmtree-scan-filter", scan_filter,
       "Scans read only the slot range the fingerprints mark used");
    sw("--dmtree-read-delegation", read_delegation,
       "Concurrent searches of one key on a compute node share one read");
    sw("--dmtree-write-combining", write_combining,
       "Concurrent updates of one key on a compute node share one write");
    g.add_option("--dmtree-batch-limit", base.batch_limit,
                 "Followers per delegated or combined round")
        ->check(CLI::Range(1u, 1u << 16))
        ->capture_default_str();
    g.add_option("--dmtree-span", base.leaf_span, "KV slots per leaf (= fingerprints per table)")
        ->check(CLI::Range(4u, 64u))
        ->capture_default_str();
    g.add_option("--dmtree-internal-span", base.internal_span, "Pivots per internal node")
        ->check(CLI::Range(4u, 1024u))
        ->capture_default_str();
    g.add_option("--dmtree-vnodes", base.vnodes,
                 "Virtual nodes per compute node on the ownership ring")
        ->check(CLI::Range(1u, 4096u))
        ->capture_default_str();
    g.add_option("--dmtree-combiner-slots", base.combiner_slots,
                 "Delegation/combining slots per compute node")
        ->check(CLI::Range(1u, 1u << 24))
        ->capture_default_str();
    g.add_option_function<uint64_t>(
         "--dmtree-max-leaves", [this](const uint64_t& v) { max_leaves = v; },
         "Leaf arena capacity (default: sized from the expected keys)")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  }
  std::string check() const { return {}; }

  dmtree::Options resolve(const IndexOptions& io) const {
    dmtree::Options o = base;
    o.value_size = static_cast<uint32_t>(io.value_size);
    if (io.cache_bytes) o.cache_bytes = io.cache_bytes;  // --cache-mb: per compute node
    if (!ablation.empty()) {
      int step = 0;
      while (ablation != kSteps[step]) ++step;
      o.scan_filter = step >= 1;
      o.collaborative = o.cached_copies = step >= 2;
      o.read_delegation = o.write_combining = step >= 3;
    }
    if (collaborative) o.collaborative = *collaborative;
    if (cached_copies) o.cached_copies = *cached_copies;
    if (scan_filter) o.scan_filter = *scan_filter;
    if (read_delegation) o.read_delegation = *read_delegation;
    if (write_combining) o.write_combining = *write_combining;
    // Leaves are half full on average after splits: room for expected_keys with margin (a leaf
    // holds span/4 keys in the worst case we plan for). The arena is reserved at create.
    if (max_leaves)
      o.max_leaves = *max_leaves;
    else if (io.expected_keys)
      o.max_leaves = io.expected_keys / std::max<uint32_t>(1, o.leaf_span / 4) + 1024;
    return o;
  }
};

template <Transport T>
struct DmtreeAdapter {
  static constexpr std::string_view kName = "dmtree";
  static constexpr std::string_view kSummary =
      "DMTree (FAST'26): FP-B+-tree with fingerprint tables and leaf locks on compute nodes";
  static constexpr bool kLocal = false;
  using Flags = DmtreeFlags;
  using Index = PerComputeNode<T, dmtree::Tree<T>, dmtree::Options>;
  using Handle = typename dmtree::Tree<T>::Handle;

  static std::shared_ptr<Index> create(Client<T>& setup, const IndexOptions& io, const Flags& f) {
    auto idx = std::make_shared<Index>(f.resolve(io));
    idx->create_first(setup);
    return idx;
  }
  static nlohmann::json describe(const IndexOptions& io, const Flags& f) {
    const dmtree::Options o = f.resolve(io);
    nlohmann::json j = {{"collaborative", o.collaborative},
                        {"cached_copies", o.cached_copies},
                        {"scan_filter", o.scan_filter},
                        {"read_delegation", o.read_delegation},
                        {"write_combining", o.write_combining},
                        {"batch_limit", o.batch_limit},
                        {"span", o.leaf_span},
                        {"internal_span", o.internal_span},
                        {"cache_bytes", o.cache_bytes},
                        {"vnodes", o.vnodes},
                        {"combiner_slots", o.combiner_slots},
                        {"max_leaves", o.max_leaves}};
    if (!f.ablation.empty()) j["ablation"] = f.ablation;
    return j;
  }
  static Handle handle(Index& idx, Client<T>& c) { return idx.tree_for(c)->handle(c); }
  static IndexStats stats(Index& idx, Client<T>&) { return idx.merged_stats(); }
  // The internal-node cache belongs to a compute node, not to a handle: reported once per node.
  static uint64_t cache_bytes(Index&, Handle&) { return 0; }
  static uint64_t shared_cache_bytes(Index& idx) { return idx.cache_bytes(); }
};

}  // namespace dmrt::bench
