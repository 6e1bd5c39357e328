// Memory-node services on shm: a service thread answers requests and works on its region locally.
#include <gtest/gtest.h>

#include <cstring>

#include "policies/shm/service.h"
#include "runtime/local_memory.h"
#include "runtime/scheduler.h"
#include "test_cluster.h"

namespace dmrt {
namespace {

TEST(Service, AnswersRequestsFromManyComputeFibers) {
  auto pool = testing::small_pool(1, 1);
  NodeId cn = pool->config().compute_nodes()[0];
  // The service sums the words of a remote array locally and replies with the sum; the counter it
  // shares with compute clients is bumped with a verb, never a CPU atomic.
  testing::ShmClient setup = testing::make_client(pool, 500);
  GlobalAddress array = setup.alloc_on(0, 64 * 8);
  GlobalAddress served = setup.alloc_on(0, 8);
  for (uint64_t i = 0; i < 64; ++i) setup.write(array + 8 * i, &i, 8);
  shm::ServiceHost host(pool, 0, 2, [&](ServiceContext<ShmTransport>& ctx) {
    Message req;
    while (ctx.next_message(req)) {
      uint64_t sum = 0;
      for (uint64_t i = 0; i < 64; ++i)
        sum += local::load_word(ctx.region() + array.offset() + 8 * i);
      ctx.client().faa(served, 1);
      ctx.client().reply(req, 1, {reinterpret_cast<const std::byte*>(&sum), 8});
    }
  });
  Scheduler s({2, 4});
  s.run([&](const WorkerId& w) {
    testing::ShmClient c(shm::Endpoint(pool, cn, w.index));
    for (int i = 0; i < 50; ++i) {
      Message m = c.call(0, 0, 1, {});
      uint64_t sum;
      std::memcpy(&sum, m.payload.data(), 8);
      ASSERT_EQ(sum, 63u * 64u / 2u);
      c.faa(served, 0);
    }
  });
  host.stop();
  EXPECT_EQ(setup.read_value<uint64_t>(served), 8u * 50u);
}

TEST(Service, FailureInAServiceFiberIsReportedByStop) {
  auto pool = testing::small_pool(1, 1);
  shm::ServiceHost host(
      pool, 0, 1, [](ServiceContext<ShmTransport>&) { throw std::runtime_error("service broke"); });
  try {
    host.stop();
    FAIL() << "no failure reported";
  } catch (const WorkerFailure& e) {
    EXPECT_NE(std::string(e.what()).find("service broke"), std::string::npos);
  }
}

}  // namespace
}  // namespace dmrt
