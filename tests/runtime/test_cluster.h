// Test helper: a small embedded shm cluster and clients on it.
#pragma once

#include <memory>

#include "policies/shm/transport.h"
#include "runtime/client.h"

namespace dmrt::testing {

using ShmClient = Client<ShmTransport>;

// Pools for tests yield the fiber after every round trip, so that the fibers of one thread
// interleave inside operations as they do on RDMA (shm::Pool::set_yield_per_round_trip).
inline std::shared_ptr<shm::Pool> interleaved(std::shared_ptr<shm::Pool> pool) {
  pool->set_yield_per_round_trip(true);
  return pool;
}

inline std::shared_ptr<shm::Pool> small_pool(unsigned memory_nodes = 1, unsigned compute_nodes = 1,
                                             uint64_t memory_bytes = uint64_t{64} << 20) {
  return interleaved(shm::Pool::create(
      ClusterConfig::embedded(memory_nodes, compute_nodes, memory_bytes, uint64_t{8} << 20)));
}

inline ShmClient make_client(const std::shared_ptr<shm::Pool>& pool, uint32_t id,
                             ClientOptions opts = {}) {
  NodeId home = pool->config().compute_nodes().empty() ? 0 : pool->config().compute_nodes()[0];
  return ShmClient(shm::Endpoint(pool, home, id), opts);
}

}  // namespace dmrt::testing
