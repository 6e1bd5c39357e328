// HStore test helpers: an shm cluster with both servers running, sizing under sanitizers, counters.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include "dmrt/indexes/hstore/detail/deploy.h"
#include "dmrt/indexes/hstore/hstore.h"
#include "dmrt/policies/shm/service.h"
#include "tests/runtime/test_cluster.h"

namespace dmrt::testing {

using HIndex = hstore::Index<ShmTransport>;
using HDeployment = hstore::Deployment<ShmTransport>;

// True under ThreadSanitizer / AddressSanitizer: concurrent tests then run at reduced sizes.
constexpr bool kSanitized =
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

// Operation counts: divided by 4 under sanitizers, multiplied by HSTORE_SCALE when set.
inline size_t scaled(size_t n) {
  const char* s = std::getenv("HSTORE_SCALE");
  size_t k = s ? static_cast<size_t>(std::max(1, std::atoi(s))) : 1;
  return kSanitized ? std::max<size_t>(1, n * k / 4) : n * k;
}

inline HDeployment::HostFactory shm_hosts(const std::shared_ptr<shm::Pool>& pool) {
  return [pool](NodeId node, unsigned fibers, ServiceBody<ShmTransport> body) -> HDeployment::Stop {
    auto h = std::make_shared<shm::ServiceHost>(pool, node, fibers, std::move(body));
    return [h] { h->stop(); };
  };
}

// A pool, a setup client (id 400), the index and both servers.
struct HStoreCluster {
  std::shared_ptr<shm::Pool> pool;
  ShmClient setup;
  std::shared_ptr<HIndex> index;
  std::unique_ptr<HDeployment> servers;

  HStoreCluster(hstore::Options o, unsigned memory_nodes = 2, unsigned compute_nodes = 1,
                uint64_t memory_bytes = uint64_t{128} << 20, std::span<const Key> initial = {},
                const HIndex::ValueFn& value_of = nullptr, hstore::ServerOptions so = {})
      : pool(small_pool(memory_nodes, compute_nodes, memory_bytes)), setup(make_client(pool, 400)) {
    index = HIndex::create(setup, o, initial, value_of);
    servers = std::make_unique<HDeployment>(index, shm_hosts(pool), so);
    servers->start();
    if (!servers->wait_serving(setup, 60'000'000'000ull))
      throw std::runtime_error("hstore servers never came up");
  }
  // Servers with per-host options (test-only faults), on the default cluster.
  HStoreCluster(hstore::Options o, hstore::ServerOptions so)
      : HStoreCluster(o, 2, 1, uint64_t{128} << 20, {}, nullptr, so) {}
  ~HStoreCluster() {
    if (servers) servers->stop();
  }
  NodeId compute(unsigned i = 0) const { return pool->config().compute_nodes()[i]; }
  ShmClient client(uint32_t id, unsigned compute_node = 0) {
    return ShmClient(shm::Endpoint(pool, compute(compute_node), id));
  }
};

template <class F>
VerbCounters delta(ShmClient& c, F&& f) {
  VerbCounters before = c.counters().total;
  f();
  return c.counters().total - before;
}

}  // namespace dmrt::testing
