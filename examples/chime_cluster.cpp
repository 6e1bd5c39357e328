// Example: CHIME, a range index, on a cluster read from a file (examples/cluster.toml: two memory
// and two compute nodes), with the compute nodes' clients as fibers on 2 OS threads; then an
// ordered scan. Build: c++ chime_cluster.cpp $(pkg-config --cflags --libs dmrt)
// Run: ./chime_cluster cluster.toml
#include <cstdio>
#include <string>
#include <vector>

#include "dmrt/indexes/chime/chime.h"
#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/scheduler.h"

int main(int argc, char** argv) {
  using namespace dmrt;
  using Tree = chime::Tree<ShmTransport>;
  if (argc != 2) {
    std::fprintf(stderr, "usage: chime_cluster CLUSTER.toml\n");
    return 2;
  }
  const ClusterConfig config = ClusterConfig::from_toml_file(argv[1]);
  auto pool = shm::Pool::create(config);
  const std::vector<NodeId> compute = config.compute_nodes();

  // CHIME keeps per-compute-node state (its internal-node cache, the hotspot buffer): one tree
  // object per compute node. The first creates the tree in the memory pool, the others attach.
  Tree::Options opts;
  opts.cache_bytes = uint64_t{8} << 20;
  std::vector<std::shared_ptr<Tree>> trees;
  for (size_t i = 0; i < compute.size(); ++i) {
    Client<ShmTransport> c(shm::Endpoint(pool, compute[i], 1000));
    trees.push_back(i == 0 ? Tree::create(c, opts) : Tree::attach(c, opts));
  }

  // 2 threads x 8 fibers = 16 clients, homed round-robin over the compute nodes; each inserts
  // every 16th key of 1..16000.
  constexpr unsigned kThreads = 2, kFibers = 8, kClients = kThreads * kFibers;
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& w) {
    const size_t node = w.index % compute.size();
    Client<ShmTransport> c(shm::Endpoint(pool, compute[node], w.index));
    auto h = trees[node]->handle(c);
    for (Key k = 1 + w.index; k <= 16000; k += kClients) h.insert(k, "value");
  });

  Client<ShmTransport> reader(shm::Endpoint(pool, compute.back(), 1001));
  auto h = trees.back()->handle(reader);
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(5000, 10, rows);
  std::printf("chime_cluster: %zu memory + %zu compute nodes; scan from 5000:",
              config.memory_nodes().size(), compute.size());
  bool ordered = rows.size() == 10;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::printf(" %lu", static_cast<unsigned long>(rows[i].first));
    ordered = ordered && rows[i].first == 5000 + i;
  }
  std::printf("\n");
  return ordered ? 0 : 1;
}
