// The simulated cluster the index tests on sim share: the rdma-cx6 preset, a few compute nodes of
// a few clients each, and a 256 MiB memory node (enough for every index at test sizes).
#pragma once

#include "dmrt/policies/sim/cluster.h"

namespace dmrt::sim {

inline Options small_test_cluster(unsigned compute_nodes, unsigned clients_per_node) {
  Options o = Options::preset("rdma-cx6");
  o.compute_nodes = compute_nodes;
  o.clients_per_node = clients_per_node;
  o.memory_bytes = uint64_t{256} << 20;
  return o;
}

// The client that creates an index before the simulation runs (untimed: no simulation is running
// on this thread yet). Its id is outside the workers' range.
inline SimClient untimed_setup_client(Cluster& cluster) {
  return SimClient(cluster.endpoint(cluster.compute_nodes()[0], 999));
}

}  // namespace dmrt::sim
