// Helpers the linprobe tests share: a pool of two memory nodes (so KV blocks lie on both) and
// clients on it.
#pragma once

#include <memory>

#include "dmrt/indexes/linprobe/linprobe.h"
#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/client.h"

namespace dmrt::linprobe::testing {

using ShmClient = Client<ShmTransport>;
using ShmTable = HashTable<ShmTransport>;

// Fibers yield after every round trip, so that they interleave inside operations as on RDMA.
inline std::shared_ptr<shm::Pool> pool() {
  auto p = shm::Pool::create(ClusterConfig::embedded(2, 1, uint64_t{64} << 20, uint64_t{8} << 20));
  p->set_yield_per_round_trip(true);
  return p;
}

inline ShmClient client(const std::shared_ptr<shm::Pool>& p, uint32_t id, ClientOptions o = {}) {
  return ShmClient(shm::Endpoint(p, p->config().compute_nodes()[0], id), o);
}

inline Options small(uint64_t buckets = 256, uint32_t window = 4, uint32_t value_size = 64) {
  Options o;
  o.buckets = buckets;
  o.window = window;
  o.value_size = value_size;
  return o;
}

}  // namespace dmrt::linprobe::testing
