// One index object per compute node, for adapters of indexes with per-compute-node state.
#pragma once

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "dmrt/runtime/client.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::bench {

// CHIME, Sherman and DMTree keep their internal-node cache, hotspot buffer, local lock table or
// collaborative-service membership in a Tree object that stands for one compute node: the first
// is create()d, every other compute node attach()es to the same remote tree. dmrt-bench homes its
// clients round-robin over the compute nodes, so the adapter keeps one Tree per node:
// create_first() makes the tree on the setup client's node, tree_for() attaches a Tree for any
// other node the first time one of its clients asks. Attaching runs verbs, so the map is guarded by
// a spin flag that waits with the client's pause() (never a blocking mutex held across a verb,
// which would stall a sim or verbs scheduler).
template <Transport T, class Tree, class Opts>
class PerComputeNode {
 public:
  explicit PerComputeNode(Opts o) : opts_(std::move(o)) {}

  void create_first(Client<T>& setup) {
    trees_.emplace(setup.home_node(), Tree::create(setup, opts_));
  }

  // The same for a tree another process created (dmrt-bench --attach).
  void attach_first(Client<T>& setup) {
    trees_.emplace(setup.home_node(), Tree::attach(setup, opts_));
  }

  std::shared_ptr<Tree> tree_for(Client<T>& c) {
    while (busy_.test_and_set(std::memory_order_acquire)) c.pause();
    std::shared_ptr<Tree> t;
    try {
      auto it = trees_.find(c.home_node());
      if (it != trees_.end()) {
        t = it->second;
      } else {
        t = Tree::attach(c, opts_);
        trees_.emplace(c.home_node(), t);
      }
    } catch (...) {
      busy_.clear(std::memory_order_release);
      throw;
    }
    busy_.clear(std::memory_order_release);
    return t;
  }

  const Opts& options() const { return opts_; }

  // Between phases only (no client runs): the Trees' figures merged, each read with `c`.
  // Counters add up over the nodes; `height` is the same tree seen from each node, so the
  // largest cached view is kept.
  IndexStats merged_stats(Client<T>& c) const {
    IndexStats s;
    for (auto& [node, t] : trees_)
      for (auto& [k, v] : t->stats(c)) {
        if (k == "height")
          s[k] = std::max(s[k], v);
        else
          s[k] += v;
      }
    s["compute_nodes"] = static_cast<double>(trees_.size());
    return s;
  }
  // Compute-side cache over every node (each Tree's own figure).
  uint64_t cache_bytes() const {
    uint64_t n = 0;
    for (auto& [node, t] : trees_) n += t->cache_bytes();
    return n;
  }

 private:
  Opts opts_;
  std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
  std::map<NodeId, std::shared_ptr<Tree>> trees_;
};

}  // namespace dmrt::bench
