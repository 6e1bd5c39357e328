// Per-op costs of a B+-tree index on sim by key size: the "## Long keys" tables of the CHIME,
// Sherman and DMTree READMEs.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../sherman/kv_checks.h"
#include "../sim/small_cluster.h"
#include "dmrt/policies/sim/cluster.h"
#include "dmrt/runtime/key_bytes.h"

namespace dmrt::testing {

// Key r of the measured set, key_size bytes: "user" + the zero-padded spread rank (key_size 8:
// the integer key's 8 bytes).
inline std::string sized_key(uint32_t key_size, size_t r) {
  if (key_size == 8) return key_bytes(key_of_rank(r));
  std::string d = std::to_string(key_of_rank(r));
  return "user" + std::string(key_size - 4 - d.size(), '0') + d;
}

struct OpCosts {
  double rt, local, rd, wr;  // round trips, local accesses, bytes read, bytes written per op
};
struct KeySizeCosts {
  uint64_t node_bytes;  // what node_bytes(tree) says: a leaf, an entry
  OpCosts search, insert, update, scan;
};

// One compute node (local accesses are its own), Options o (o.key_size the key size), 20,000
// keys loaded then the cache warmed with a search of each; then 2,000 of each: searches and
// updates of loaded keys, inserts of new ones, 50-row scans. Printed as `name`, node_bytes as
// `node` ("leaf", "entry").
template <class Tree, class NodeBytes>
KeySizeCosts key_size_costs(const char* name, const char* node, const typename Tree::Options& o,
                            NodeBytes&& node_bytes) {
  sim::Cluster cluster{sim::small_test_cluster(1, 1)};
  sim::SimClient c = sim::untimed_setup_client(cluster);
  const uint32_t ks = o.key_size;
  auto t = Tree::create(c, o);
  auto h = t->handle(c);
  const size_t n = 20000, q = 2000;
  std::string v;
  for (size_t i = 0; i < n; ++i) EXPECT_TRUE(h.insert(sized_key(ks, i), "value"));
  for (size_t i = 0; i < n; ++i) h.search(sized_key(ks, i), v);  // warm the cache
  auto per = [&](auto&& op) {
    VerbCounters before = c.counters().total;
    for (size_t i = 0; i < q; ++i) op(i);
    VerbCounters d = c.counters().total - before;
    return OpCosts{double(d.round_trips) / q, double(d.local_accesses) / q,
                   double(d.bytes_read) / q, double(d.bytes_written) / q};
  };
  KeySizeCosts f{static_cast<uint64_t>(node_bytes(*t)), {}, {}, {}, {}};
  f.search = per([&](size_t i) { EXPECT_TRUE(h.search(sized_key(ks, i * 7 % n), v)); });
  f.update = per([&](size_t i) { EXPECT_TRUE(h.update(sized_key(ks, i * 7 % n), "new")); });
  f.insert = per([&](size_t i) { EXPECT_TRUE(h.insert(sized_key(ks, n + i), "value")); });
  std::vector<std::pair<std::string, std::string>> rows;
  f.scan = per([&](size_t i) {
    h.scan(std::string_view(sized_key(ks, i * 7 % n)), 50, rows);
    EXPECT_FALSE(rows.empty());  // fewer than 50 from the last keys
  });
  std::printf(
      "%s key_size %u: %s %lu B | search %.4f RT %.4f local %.4f B read | insert %.4f RT %.4f "
      "local "
      "%.4f B read %.4f B written | update %.4f RT %.4f local %.4f B read %.4f B written | "
      "scan(50) %.4f RT %.4f local %.4f B read\n",
      name, ks, node, static_cast<unsigned long>(f.node_bytes), f.search.rt, f.search.local,
      f.search.rd, f.insert.rt, f.insert.local, f.insert.rd, f.insert.wr, f.update.rt,
      f.update.local, f.update.rd, f.update.wr, f.scan.rt, f.scan.local, f.scan.rd);
  return f;
}

}  // namespace dmrt::testing
