// Test helper: a small embedded shm cluster and clients on it.
#pragma once

#include <memory>
#include <vector>

#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/client.h"

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

// A worker's client and its handle of an index that stands for one compute node (DMTree, SMART).
template <class Tree>
struct NodeClient {
  ShmClient client;
  typename Tree::Handle handle;
  NodeClient(std::shared_ptr<shm::Pool> p, NodeId home, uint32_t id, const std::shared_ptr<Tree>& t)
      : client(shm::Endpoint(p, home, id)), handle(t->handle(client)) {}
};

// A pool with n compute nodes and one index object per compute node: created through the first
// node's setup client, attached through the others' (setup clients 900 + i).
template <class Tree>
struct PerNodeTrees {
  std::shared_ptr<shm::Pool> pool;
  std::vector<NodeId> cns;
  std::vector<std::unique_ptr<ShmClient>> setup;
  std::vector<std::shared_ptr<Tree>> trees;
  PerNodeTrees(unsigned n, const typename Tree::Options& o) {
    pool = small_pool(1, n, uint64_t{256} << 20);
    cns = pool->config().compute_nodes();
    for (unsigned i = 0; i < n; ++i) {
      setup.push_back(std::make_unique<ShmClient>(shm::Endpoint(pool, cns[i], 900 + i)));
      trees.push_back(i == 0 ? Tree::create(*setup[0], o) : Tree::attach(*setup[i], o));
    }
  }
};

}  // namespace dmrt::testing
