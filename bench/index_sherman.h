// `sherman`: Sherman, one Tree per compute node; its --sherman-* flags come from
// sherman::Options::fields().
#pragma once

#include <string_view>

#include "bench/adapter.h"
#include "bench/dm_adapter.h"
#include "indexes/sherman/tree.h"

namespace dmrt::bench {

struct ShermanSpec {
  static constexpr std::string_view kName = "sherman";
  static constexpr std::string_view kTitle = "Sherman";
  static constexpr std::string_view kSummary =
      "Sherman (SIGMOD'22): B+ tree with cached internal nodes, whole-leaf reads, hierarchical "
      "locks";
  using Options = sherman::Options;
  template <Transport T>
  using Index = sherman::Index<T>;
  // Its internal-node cache and local lock table belong to a compute node.
  static constexpr bool kPerComputeNode = true;

  template <Transport T>
  static Options options(const IndexOptions& io) {
    return tree_options<Options>(io);
  }
};

}  // namespace dmrt::bench
