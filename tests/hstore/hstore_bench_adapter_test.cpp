// The dmrt-bench adapter of HStore (the generic DmAdapter with bench/indexes/hstore_run.h's run
// spec) compiles and runs on shm and on sim.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/indexes/adapter.h"
#include "bench/indexes/hstore_run.h"
#include "bench/indexes/spec.h"
#include "dmrt/policies/sim/cluster.h"
#include "tests/runtime/test_cluster.h"

namespace dmrt::bench {
namespace {

template <Transport T>
void exercise(Client<T>& setup, Client<T>& c) {
  using A = DmAdapter<HStoreRun, T>;
  const NoFlagsGiven<hstore::Options> flags;  // none given on a command line
  static_assert(RangeHandle<typename A::Handle>, "HStore offers scans (workload E)");
  IndexOptions io;
  io.value_size = 32;
  io.expected_keys = 2000;
  auto idx = A::create(setup, io, flags);
  auto h = A::handle(*idx, c);
  std::string v(32, 'v'), out;
  for (Key k = 1; k <= 500; ++k) ASSERT_TRUE(h.insert(k, v));
  for (Key k = 1; k <= 500; ++k) ASSERT_TRUE(h.search(k, out));
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(100, 10, rows);
  ASSERT_EQ(rows.size(), 10u);
  EXPECT_EQ(A::cache_bytes(*idx, h), 0u);
  IndexStats s = A::stats(*idx, setup);
  EXPECT_EQ(s["keys"], 500);
  io.value_size = hstore::Record::kMaxValue + 1;
  EXPECT_THROW(A::create(setup, io, flags), ConfigError);
}

TEST(HStoreBenchAdapter, Shm) {
  auto pool = testing::small_pool(2, 1, uint64_t{64} << 20);
  auto setup = testing::make_client(pool, 100);
  auto c = testing::make_client(pool, 1);
  exercise<ShmTransport>(setup, c);
}

// dmrt-bench's shm deployment: both servers' fibers on one thread (ShmJointServiceHost), each
// homed on its own memory node. The protocol is the same: a write is its record WRITE plus one
// request, and the HTS still ships it to the SLS, which logs it; one server cannot fail alone.
TEST(HStoreBenchAdapter, ShmServersShareOneThread) {
  auto pool = testing::small_pool(2, 1, uint64_t{64} << 20);
  auto setup = testing::make_client(pool, 100);
  auto c = testing::make_client(pool, 1);
  hstore::Options o;
  o.expected_keys = 2000;
  o.status_poll_ns = 60'000'000'000ull;  // no status re-read while waiting on a loaded machine
  auto idx = hstore::Index<ShmTransport>::create(setup, o);
  ASSERT_NE(idx->meta().hts_node, idx->meta().sls_node);
  // The joint host shm's hosting offers (dmrt/policies/shm/hosting.h), as the bench deploys it.
  const ServiceHosting<ShmTransport> hosting = service_hosting(setup);
  ASSERT_TRUE(hosting.start_joint);
  hstore::Deployment<ShmTransport> d(
      idx, hstore::Deployment<ShmTransport>::JointHostFactory(hosting.start_joint));
  d.start();
  ASSERT_TRUE(d.wait_serving(setup, 30'000'000'000ull));
  auto h = idx->handle(c);
  std::string v(16, 'v'), out;
  for (Key k = 1; k <= 200; ++k) ASSERT_TRUE(h.insert(k, v));
  const Counters before = c.counters();
  for (Key k = 1; k <= 200; ++k) ASSERT_TRUE(h.update(k, v));
  const VerbCounters& a = c.counters().total;
  const VerbCounters& b = before.total;
  EXPECT_EQ(a.round_trips - b.round_trips, 200u);  // the record WRITE of each update
  EXPECT_EQ(a.messages - b.messages, 200u);        // one request each
  for (Key k = 1; k <= 200; ++k) ASSERT_TRUE(h.search(k, out));
  IndexStats s = idx->stats(setup);
  EXPECT_EQ(s["sls_logged"], 400);  // every write went through the skiplist server's log
  EXPECT_EQ(s["keys"], 200);
  EXPECT_THROW(d.fail_sls(setup), ConfigError);
  EXPECT_THROW(d.fail_hts(setup), ConfigError);
  d.stop();
}

#if DMRT_TRANSPORT_SIM
TEST(HStoreBenchAdapter, Sim) {
  sim::Options o = sim::Options::preset("rdma-cx6");
  o.memory_bytes = uint64_t{64} << 20;
  sim::Cluster cluster(o);
  cluster.run([&](sim::SimClient& c, const sim::WorkerInfo&) {
    sim::SimClient setup(cluster.endpoint(cluster.compute_nodes()[0], 100));
    exercise<SimTransport>(setup, c);
  });
}
#endif

}  // namespace
}  // namespace dmrt::bench
