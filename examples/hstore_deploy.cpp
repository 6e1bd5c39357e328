// Example: HStore's deployment. The hash-table server (HTS) and the skiplist server (SLS) run as
// memory-node services, here each an OS thread of fibers of this process (shm::ServiceHost), and
// clients talk to them; GET is one-sided, writes go through the HTS, SCAN through the SLS.
// Build: c++ hstore_deploy.cpp $(pkg-config --cflags --libs dmrt)
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "dmrt/indexes/hstore/detail/deploy.h"
#include "dmrt/policies/shm/service.h"
#include "dmrt/policies/shm/transport.h"

int main() {
  using namespace dmrt;
  using HStore = hstore::Index<ShmTransport>;
  using Deployment = hstore::Deployment<ShmTransport>;
  // Two memory nodes (the HTS goes on the first, the SLS on the last) and one compute node.
  auto pool = shm::Pool::create(ClusterConfig::embedded(2, 1, uint64_t{128} << 20));
  const NodeId compute = pool->config().compute_nodes().front();
  Client<ShmTransport> client(shm::Endpoint(pool, compute, 1));

  auto index = HStore::create(client, HStore::Options{});
  // How a server is hosted is the transport's business: on shm, a thread of fibers homed on the
  // server's memory node. (On verbs, dmrt-node --service hstore-hts / hstore-sls hosts them.)
  Deployment servers(index, [pool](NodeId node, unsigned fibers, ServiceBody<ShmTransport> body) {
    auto host = std::make_shared<shm::ServiceHost>(pool, node, fibers, std::move(body));
    return Deployment::Stop([host] { host->stop(); });
  });
  servers.start();
  if (!servers.wait_serving(client, 30'000'000'000ull)) {
    std::fprintf(stderr, "hstore_deploy: the servers did not come up\n");
    return 1;
  }

  auto h = index->handle(client);
  for (Key k = 1; k <= 100; ++k) h.insert(k, "record " + std::to_string(k));
  h.update(50, "fifty");
  h.remove(51);
  std::string v;
  const bool got = h.search(50, v);
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(49, 3, rows);  // 49, 50, 52: the SLS has every acknowledged write
  std::printf("hstore_deploy: key 50 -> %s; scan from 49:", got ? v.c_str() : "(absent)");
  for (const auto& [k, value] : rows)
    std::printf(" %lu=%s", static_cast<unsigned long>(k), value.c_str());
  std::printf("\n");
  servers.stop();
  return got && v == "fifty" && rows.size() == 3 && rows[2].first == 52 ? 0 : 1;
}
