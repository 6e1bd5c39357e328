// Helpers for the RACE tests: a pool, clients, values that name their key, copy counting.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "dmrt/indexes/race/race.h"
#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/client.h"

namespace dmrt::race::testing {

using ShmClient = Client<ShmTransport>;
using ShmIndex = RaceIndex<ShmTransport>;

static_assert(KvHandle<ShmIndex::Handle>);

inline std::shared_ptr<shm::Pool> pool(unsigned memory_nodes = 2,
                                       uint64_t memory_bytes = uint64_t{256} << 20) {
  auto p =
      shm::Pool::create(ClusterConfig::embedded(memory_nodes, 1, memory_bytes, uint64_t{8} << 20));
  p->set_yield_per_round_trip(true);  // fibers interleave inside operations, as on RDMA
  return p;
}

inline NodeId compute_node(const std::shared_ptr<shm::Pool>& p) {
  return p->config().compute_nodes()[0];
}

inline ShmClient client(const std::shared_ptr<shm::Pool>& p, uint32_t id) {
  return ShmClient(shm::Endpoint(p, compute_node(p), id));
}

// A value that says which key and version it belongs to, padded to `len` bytes.
inline std::string value_for(uint64_t key, uint64_t version, size_t len) {
  std::string v = "k" + std::to_string(key) + "v" + std::to_string(version) + ";";
  if (v.size() < len)
    v.append(len - v.size(), static_cast<char>('a' + key % 26));
  else
    v.resize(len);
  return v;
}
inline bool value_names_key(const std::string& v, uint64_t key) {
  std::string prefix = "k" + std::to_string(key) + "v";
  return v.compare(0, prefix.size(), prefix) == 0;
}

// Copies of each key across every subtable's slots.
inline std::map<uint64_t, int> copies(ShmIndex& idx, ShmClient& c) {
  std::map<uint64_t, int> n;
  for (const Item& it : idx.items(c)) ++n[it.key];
  return n;
}

// YCSB's "user<n>" key, zero-padded after "user" to exactly `len` bytes (len >= 24): keys of one
// length share a long prefix and differ only in their last digits.
inline std::string user_key(uint64_t n, size_t len) {
  std::string d = std::to_string(n);
  std::string k = "user";
  k.append(len - k.size() - d.size(), '0');
  return k + d;
}

// Copies of each byte key across every subtable's slots.
inline std::map<std::string, int> byte_copies(ShmIndex& idx, ShmClient& c) {
  std::map<std::string, int> n;
  for (const Item& it : idx.items(c)) ++n[it.key_str];
  return n;
}

}  // namespace dmrt::race::testing
