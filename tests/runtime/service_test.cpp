// Memory-node services on shm: a service thread answers requests and works on its region locally;
// one host per service (dmrt/runtime/service_claim.h).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "dmrt/policies/shm/service.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/scheduler.h"
#include "dmrt/runtime/service_claim.h"
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

// Two hosts of one service: the second is refused while the first beats; once the first's beat
// stops (a killed host), the second takes the claim over after the lease and the first, should it
// wake, is told to stop; a clean release frees the claim at once.
TEST(ServiceClaim, OneHostAtATimeAndADeadOnesReplacementTakesOver) {
  auto pool = testing::small_pool(1, 2);
  const auto cns = pool->config().compute_nodes();
  testing::ShmClient a = testing::make_client(pool, 600);
  testing::ShmClient b(shm::Endpoint(pool, cns[1], 601));
  const GlobalAddress words = a.alloc_on(0, 16);
  const ClaimTiming t{10'000'000, 1'000'000'000};  // beat 10 ms, lease 1 s
  auto never = [] { return false; };

  ServiceClaim<ShmTransport> first(words, "the test service", t);
  ASSERT_TRUE(first.acquire(a, never));
  EXPECT_FALSE(first.took_over());
  std::atomic<bool> beating{true};
  std::thread beater([&] {
    while (beating.load()) {
      first.beat(a);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  ServiceClaim<ShmTransport> second(words, "the test service", t);
  const uint64_t t0 = b.now_ns();
  try {
    second.acquire(b, never);
    ADD_FAILURE() << "a second host of a live service was accepted";
  } catch (const ServiceConflict& e) {
    EXPECT_NE(std::string(e.what()).find("the test service is already served"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(b.now_ns() - t0, t.lease_ns) << "refused only after the lease";
  beating = false;  // the first host "dies": no release, no more beats
  beater.join();

  ServiceClaim<ShmTransport> third(words, "the test service", t);
  const uint64_t t1 = b.now_ns();
  ASSERT_TRUE(third.acquire(b, never));
  EXPECT_TRUE(third.took_over());
  EXPECT_GE(b.now_ns() - t1, t.lease_ns) << "took over before the lease ran out";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_THROW(first.beat(a), ServiceConflict) << "the old owner is told it lost the claim";

  third.release(b);  // clean stop: the next host need not wait
  ServiceClaim<ShmTransport> fourth(words, "the test service", t);
  const uint64_t t2 = a.now_ns();
  ASSERT_TRUE(fourth.acquire(a, never));
  EXPECT_FALSE(fourth.took_over());
  EXPECT_LT(a.now_ns() - t2, t.lease_ns);

  // A contender asked to stop while it waits gives up without the claim.
  ServiceClaim<ShmTransport> fifth(words, "the test service", t);
  int polls = 0;
  EXPECT_FALSE(fifth.acquire(b, [&] { return ++polls > 3; }));
  EXPECT_FALSE(fifth.held());
}

}  // namespace
}  // namespace dmrt
