// ROLEX bulk load (§3.2-§3.3): sorted keys packed into leaves, model groups cut and trained,
// the index published at its root slot.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dmrt/indexes/common/kv_block.h"
#include "dmrt/indexes/rolex/detail/layout.h"
#include "dmrt/indexes/rolex/detail/options.h"
#include "dmrt/indexes/rolex/detail/remote.h"
#include "dmrt/indexes/rolex/detail/retrain.h"
#include "dmrt/indexes/rolex/detail/upper.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::rolex {

// A key's value at bulk load (default: the key's 8 bytes).
using ValueFn = std::function<std::string(Key)>;

// Builds the index on memory node `node` from `keys` (ascending, distinct): packs them into
// leaves (`fill`), cuts groups (at the PLR's segments, or every group_leaves leaves), trains each
// group's model and the upper models over the groups' smallest keys, and publishes the meta block
// last, so that an attach never sees a half-built index.
template <Transport T>
void bulk_load(Client<T>& c, NodeId node, const Options& o, std::span<const Key> keys,
               const ValueFn& value_of) {
  // Every WRITE is written back whatever the flush points: compute nodes and the retrainer on
  // other hosts read what the load built (sim times a bench's bulk load).
  constexpr FlushHint kWb = FlushHint::kWriteBack;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == kEmptyKey) throw LimitError("rolex: key 2^64-1 is reserved");
    if (i && keys[i] <= keys[i - 1])
      throw ConfigError("rolex: bulk-load keys must be ascending and distinct");
  }
  LeafGeometry geo{o.leaf_slots, o.indirect ? 8 : o.value_size};  // indirect: pointer words
  uint32_t per_leaf =
      std::max<uint32_t>(1, static_cast<uint32_t>(std::floor(o.leaf_slots * o.fill)));
  // Leaves with keys; groups of group_leaves leaves (empty create: initial_groups empty groups).
  std::vector<std::vector<Key>> leaf_keys;
  for (size_t i = 0; i < keys.size(); i += per_leaf)
    leaf_keys.emplace_back(keys.begin() + i, keys.begin() + std::min(keys.size(), i + per_leaf));
  std::vector<Key> group_lo;
  std::vector<std::pair<size_t, size_t>> group_span;  // [first leaf, end leaf)
  if (leaf_keys.empty()) {
    uint32_t n = std::max<uint32_t>(1, o.initial_groups);
    long double space =
        o.key_space ? static_cast<long double>(o.key_space) : 18446744073709551616.0L;
    for (uint32_t gi = 0; gi < n; ++gi) {
      group_lo.push_back(static_cast<Key>(space * gi / n));
      leaf_keys.emplace_back();
      group_span.push_back({gi, gi + 1});
    }
  } else if (o.plr_groups) {
    // The paper's bottom models are the segments of a PLR over the sorted keys (labels: the
    // positions the packing gives them). A group starts at the leaf holding a segment's first
    // key; its own model is trained afterwards on its own positions (1..k segments, A11).
    std::vector<Key> all;
    std::vector<double> labels;
    for (size_t l = 0; l < leaf_keys.size(); ++l)
      for (size_t s = 0; s < leaf_keys[l].size(); ++s) {
        all.push_back(leaf_keys[l][s]);
        labels.push_back(double(l) * o.leaf_slots + double(s));
      }
    std::vector<size_t> starts{0};
    for (const Segment& seg : train_plr(all, labels, o.epsilon, o.leaf_slots))
      if (seg.leaf_lo > starts.back()) starts.push_back(seg.leaf_lo);
    starts.push_back(leaf_keys.size());
    for (size_t i = 0; i + 1 < starts.size(); ++i)
      for (size_t l = starts[i]; l < starts[i + 1]; l += o.max_group_leaves) {
        group_lo.push_back(group_lo.empty() ? 0 : leaf_keys[l].front());
        group_span.push_back({l, std::min(starts[i + 1], l + o.max_group_leaves)});
      }
  } else {
    for (size_t l = 0; l < leaf_keys.size(); l += o.group_leaves) {
      group_lo.push_back(group_lo.empty() ? 0 : leaf_keys[l].front());
      group_span.push_back({l, std::min(leaf_keys.size(), l + o.group_leaves)});
    }
  }
  uint64_t groups = group_lo.size();
  uint64_t need = leaf_keys.size();
  uint64_t total = o.max_leaves;
  if (total == 0)
    total = std::max<uint64_t>(
        {uint64_t{1} << 14, 4 * need, 3 * o.expected_keys / o.leaf_slots + need});
  if (total < need) throw ConfigError("rolex: max_leaves is below the bulk-loaded leaves");
  if (total > entry::kLeafMask + 1)  // a table entry's leaf number has 40 bits
    throw ConfigError("rolex: max_leaves above 2^40");
  // Leaf region, group tables, CirQ, meta.
  uint64_t region_bytes = kLeafRegionHeader + total * geo.bytes();
  GlobalAddress region = c.alloc_on(node, region_bytes, 64);
  GlobalAddress gkeys = c.alloc_on(node, groups * 8, 64);
  GlobalAddress gtable = c.alloc_on(node, groups * 8, 64);
  GlobalAddress cirq = c.alloc_on(node, 64 + 8ull * o.cirq_slots, 64);
  GlobalAddress meta_addr = c.alloc_on(node, sizeof(Meta), 64);
  const std::vector<uint64_t> upper = UpperModels::train(group_lo, o.epsilon).serialize();
  GlobalAddress upper_addr = c.alloc_on(node, upper.size() * 8, 64);
  write_words(c, upper_addr, upper, kWb);
  uint64_t hdr[2] = {need, total};
  c.write(region, hdr, 16, kWb);
  std::vector<uint64_t> zeros(64 / 8 + o.cirq_slots, 0);
  c.write(cirq, zeros.data(), static_cast<uint32_t>(zeros.size() * 8), kWb);
  c.write(gkeys, group_lo.data(), static_cast<uint32_t>(groups * 8), kWb);
  Meta m;
  m.magic = kMetaMagic;
  m.groups = groups;
  m.group_keys = gkeys.raw();
  m.group_table = gtable.raw();
  m.leaf_region = region.raw();
  m.leaf_bytes = geo.bytes();
  m.cirq = cirq.raw();
  m.cirq_slots = o.cirq_slots;
  m.value_size = geo.value_size;
  m.leaf_slots = o.leaf_slots;
  m.epsilon = o.epsilon;
  m.retrain_threshold = o.retrain_threshold;
  m.upper = upper_addr.raw();
  // Leaves: numbered in key order, so they are contiguous in the region; written 64 KiB at a
  // time.
  Leaf leaf(geo);
  std::vector<uint64_t> val((geo.vwords()), 0);
  const size_t per_write = std::max<size_t>(1, (size_t{1} << 16) / geo.bytes());
  std::vector<uint64_t> run;
  // Indirect: the keys' KV blocks, packed into 64 KiB arenas, each written before the leaves
  // that point into it.
  std::vector<uint8_t> arena, block;
  GlobalAddress arena_at;
  auto flush_arena = [&] {
    if (!arena.empty()) c.write(arena_at, arena.data(), static_cast<uint32_t>(arena.size()), kWb);
    arena.clear();
  };
  constexpr size_t kArenaBytes = size_t{1} << 16;
  for (size_t l = 0; l < leaf_keys.size(); ++l) {
    leaf.clear();
    for (Key k : leaf_keys[l]) {
      std::string v = value_of ? value_of(k) : std::string(reinterpret_cast<const char*>(&k), 8);
      if (o.indirect) {
        if (v.size() > o.value_size) v.resize(o.value_size);
        kvblock::encode(v, block);
        if (arena.empty() || arena.size() + block.size() > kArenaBytes) {
          flush_arena();
          arena_at = c.alloc_on(node, kArenaBytes, 64);
        }
        val[0] = kvblock::pack(arena_at + arena.size(), static_cast<uint32_t>(block.size()));
        arena.insert(arena.end(), block.begin(), block.end());
        leaf.insert_at(leaf.count(), k, val.data());
        continue;
      }
      store_value(val.data(), v, geo.value_size);
      leaf.insert_at(leaf.count(), k, val.data());
    }
    leaf.seal();
    run.insert(run.end(), leaf.data(), leaf.data() + geo.words());
    if ((l + 1) % per_write == 0 || l + 1 == leaf_keys.size()) {
      const size_t first = l + 1 - run.size() / geo.words();
      c.write(leaf_address(region, geo.bytes(), first), run.data(),
              static_cast<uint32_t>(run.size() * 8), kWb);
      run.clear();
    }
  }
  flush_arena();  // before the index is published (below)
  // Models.
  std::vector<uint64_t> ptrs(groups);
  for (uint64_t g = 0; g < groups; ++g) {
    auto [b, e] = group_span[g];
    std::vector<std::vector<Key>> gk(leaf_keys.begin() + b, leaf_keys.begin() + e);
    ModelImage mi;
    train_group(mi, gk, group_lo[g], o.epsilon, o.leaf_slots);
    mi.hdr.magic = kModelMagic;
    mi.hdr.leaves = e - b;
    mi.hdr.group = g;
    mi.slt.assign(kSltSlots, 0);
    mi.slt[0] = 1;
    for (size_t l = b; l < e; ++l) mi.lt.push_back(entry::make(l, 0));
    std::vector<uint64_t> w = mi.serialize();
    GlobalAddress a = c.alloc_on(node, w.size() * 8, 64);
    write_words(c, a, w, kWb);
    ptrs[g] = a.raw();
  }
  // Training is the compute node's CPU (the paper's 0.28 us per key covers training and
  // placing the data); a transport whose clock needs telling (sim) is told, as for retraining.
  detail::charge_training(c, leaf_keys, ServiceOptions{}.train_ns_per_key);
  c.write(gtable, ptrs.data(), static_cast<uint32_t>(groups * 8), kWb);
  c.write(meta_addr, &m, sizeof(m), kWb);
  uint64_t raw = meta_addr.raw();
  c.write(layout::root_slot(node, o.root_slot), &raw, 8, kWb);  // publish last
}

}  // namespace dmrt::rolex
