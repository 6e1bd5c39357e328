#include <gtest/gtest.h>

#include <boost/fiber/all.hpp>
#include <cstring>
#include <string>
#include <thread>

#include "dmrt/runtime/scheduler.h"
#include "test_cluster.h"

namespace dmrt {
namespace {

std::span<const std::byte> bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
std::string text(const Message& m) {
  return {reinterpret_cast<const char*>(m.payload.data()), m.payload.size()};
}

TEST(Messaging, RequestResponseBetweenComputeAndMemoryNode) {
  auto pool = testing::small_pool(1, 1);
  // A "memory-node service": a client homed on node 0 answering its inbox (mailbox 0).
  testing::ShmClient server(shm::Endpoint(pool, 0, 1000));
  testing::ShmClient client = testing::make_client(pool, 3);
  std::thread srv([&] {
    for (int i = 0; i < 100; ++i) {
      Message req = server.receive(0);
      server.reply(req, req.tag + 1, bytes("echo:" + text(req)));
    }
  });
  for (int i = 0; i < 100; ++i) {
    std::string body = "ping " + std::to_string(i);
    Message resp = client.call(0, 0, 7, bytes(body));
    EXPECT_EQ(resp.tag, 8u);
    EXPECT_EQ(text(resp), "echo:" + body);
    EXPECT_EQ(resp.from_node, 0);
  }
  srv.join();
  EXPECT_EQ(client.counters().total.messages, 100u);
  EXPECT_EQ(client.counters().role(NodeRole::kMemory).messages, 100u);
}

TEST(Messaging, ManyFibersCallOneServiceAndGetTheirOwnAnswers) {
  auto pool = testing::small_pool(1, 1);
  NodeId cn = pool->config().compute_nodes()[0];
  std::atomic<bool> done{false};
  std::thread srv([&] {
    testing::ShmClient server(shm::Endpoint(pool, 0, 9999));
    Message req;
    while (!done.load()) {
      if (!server.try_receive(0, req)) {
        std::this_thread::yield();
        continue;
      }
      uint64_t v;
      std::memcpy(&v, req.payload.data(), 8);
      v *= 3;
      server.reply(req, 0, {reinterpret_cast<const std::byte*>(&v), 8});
    }
  });
  Scheduler s({2, 8});
  s.run([&](const WorkerId& w) {
    testing::ShmClient c(shm::Endpoint(pool, cn, w.index));
    for (uint64_t i = 0; i < 200; ++i) {
      uint64_t v = w.index * 1000 + i;
      Message m = c.call(0, 0, 1, {reinterpret_cast<const std::byte*>(&v), 8});
      uint64_t r;
      std::memcpy(&r, m.payload.data(), 8);
      ASSERT_EQ(r, v * 3);
    }
  });
  done = true;
  srv.join();
}

TEST(Messaging, OversizedMessageIsALimitError) {
  auto pool = testing::small_pool();
  auto c = testing::make_client(pool, 0);
  std::string big(pool->config().mailbox.slot_bytes, 'x');
  EXPECT_THROW(c.send(0, 0, 1, bytes(big)), LimitError);
}

TEST(Messaging, FullMailboxBlocksThenTimesOut) {
  auto pool = testing::small_pool();
  ClientOptions opts;
  opts.call_timeout_ns = 50'000'000;  // 50 ms
  auto c = testing::make_client(pool, 0, opts);
  for (uint32_t i = 0; i < pool->config().mailbox.slots; ++i) c.send(0, 0, 1, bytes("x"));
  EXPECT_THROW(c.send(0, 0, 1, bytes("x")), TransportError);
  // No service is answering: a call times out with a clear error.
  testing::ShmClient drain(shm::Endpoint(pool, 0, 77));
  Message m;
  while (drain.try_receive(0, m)) {
  }
  EXPECT_THROW(c.call(0, 0, 1, bytes("hello?")), TransportError);
}

}  // namespace
}  // namespace dmrt
