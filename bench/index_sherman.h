// `sherman`: Sherman, one Tree per compute node, its technique switches as --sherman-* flags.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "bench/adapter.h"
#include "bench/per_node.h"
#include "indexes/sherman/options.h"
#include "indexes/sherman/tree.h"
#include "runtime/client.h"
#include "runtime/kv.h"

namespace dmrt::bench {

struct ShermanFlags {
  static constexpr std::string_view kIndex = "sherman";
  static constexpr std::string_view kTitle = "Sherman";

  sherman::Options base;

  void add(CLI::App& g) {
    g.add_option("--sherman-span", base.leaf_span, "Entries per leaf")
        ->check(CLI::Range(4u, 1024u))
        ->capture_default_str();
    g.add_option("--sherman-internal-span", base.internal_span, "Pivots per internal node")
        ->check(CLI::Range(4u, 1024u))
        ->capture_default_str();
    add_switch(g, "--sherman-sorted-leaves", base.sorted_leaves,
               "Sorted leaf entries (off: unsorted, an insert writes one entry)");
    add_switch(g, "--sherman-local-lock-table", base.local_lock_table,
               "Hierarchical lock: a compute node's local lock table queues its clients and hands "
               "the remote lock over (off: every client CASes the remote lock word)");
    g.add_option("--sherman-handover-max", base.handover_max,
                 "Consecutive local hand-overs before the lock is released")
        ->check(CLI::Range(1u, 1u << 20))
        ->capture_default_str();
    g.add_option("--sherman-lock-table-slots", base.lock_table_slots,
                 "Local lock table slots per compute node")
        ->check(CLI::Range(1u, 1u << 24))
        ->capture_default_str();
    add_switch(g, "--sherman-write-combining", base.write_combining,
               "Write-back and unlock in one batch (off: the unlock is a separate round trip)");
  }
  std::string check() const { return {}; }

  sherman::Options resolve(const IndexOptions& io) const {
    sherman::Options o = base;
    o.value_size = static_cast<uint32_t>(io.value_size);
    if (io.cache_bytes) o.cache_bytes = io.cache_bytes;  // --cache-mb: per compute node
    return o;
  }
};

template <Transport T>
struct ShermanAdapter {
  static constexpr std::string_view kName = "sherman";
  static constexpr std::string_view kSummary =
      "Sherman (SIGMOD'22): B+ tree with cached internal nodes, whole-leaf reads, hierarchical "
      "locks";
  static constexpr bool kLocal = false;
  using Flags = ShermanFlags;
  using Index = PerComputeNode<T, sherman::Tree<T>, sherman::Options>;
  using Handle = typename sherman::Tree<T>::Handle;

  static std::shared_ptr<Index> create(Client<T>& setup, const IndexOptions& io, const Flags& f) {
    auto idx = std::make_shared<Index>(f.resolve(io));
    idx->create_first(setup);
    return idx;
  }
  static nlohmann::json describe(const IndexOptions& io, const Flags& f) {
    const sherman::Options o = f.resolve(io);
    return {{"span", o.leaf_span},
            {"internal_span", o.internal_span},
            {"cache_bytes", o.cache_bytes},
            {"sorted_leaves", o.sorted_leaves},
            {"local_lock_table", o.local_lock_table},
            {"handover_max", o.handover_max},
            {"lock_table_slots", o.lock_table_slots},
            {"write_combining", o.write_combining}};
  }
  static Handle handle(Index& idx, Client<T>& c) { return idx.tree_for(c)->handle(c); }
  static IndexStats stats(Index& idx, Client<T>&) { return idx.merged_stats(); }
  // The internal-node cache belongs to a compute node, not to a handle: reported once per node.
  static uint64_t cache_bytes(Index&, Handle&) { return 0; }
  static uint64_t shared_cache_bytes(Index& idx) { return idx.cache_bytes(); }
};

}  // namespace dmrt::bench
