// A second process attaches to a named pool and does CAS increments beside this one.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dmrt/runtime/scheduler.h"
#include "test_cluster.h"

namespace dmrt {
namespace {

void increment(testing::ShmClient& c, GlobalAddress w, unsigned times) {
  for (unsigned i = 0; i < times; ++i) {
    uint64_t cur = c.read_value<uint64_t>(w);
    while (true) {
      uint64_t old = c.cas(w, cur, cur + 1);
      if (old == cur) break;
      cur = old;
    }
  }
}

TEST(Process, SecondProcessCasIncrementsGiveAnExactTotal) {
  std::string name = "test" + std::to_string(getpid());
  auto pool = shm::Pool::create(ClusterConfig::embedded(1, 1, 16 << 20, 8 << 20), name);
  auto c = testing::make_client(pool, 0);
  GlobalAddress w = c.alloc(8);
  constexpr unsigned kEach = 20000;

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child forgets the parent's mapping on purpose: it attaches by name like any process.
    int rc = 0;
    try {
      auto attached = shm::Pool::attach(name);
      if (attached->node_count() != 2 || attached->region(0).role != NodeRole::kMemory) rc = 3;
      Scheduler s({2, 4});
      s.run([&](const WorkerId& id) {
        testing::ShmClient cc(shm::Endpoint(attached, 1, 100 + id.index));
        increment(cc, w, kEach / 8);
      });
    } catch (...) {
      rc = 2;
    }
    _exit(rc);
  }
  Scheduler s({2, 4});
  s.run([&](const WorkerId& id) {
    testing::ShmClient cc(shm::Endpoint(pool, 1, id.index));
    increment(cc, w, kEach / 8);
  });
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(c.read_value<uint64_t>(w), 2ull * kEach);
}

TEST(Process, AttachingToAMissingPoolIsAClearError) {
  try {
    shm::Pool::attach("no-such-pool-" + std::to_string(getpid()));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no pool named"), std::string::npos);
  }
}

TEST(Process, NamedPoolIsRemovedWithItsCreator) {
  std::string name = "gone" + std::to_string(getpid());
  { auto pool = shm::Pool::create(ClusterConfig::embedded(1, 0, 4 << 20), name); }
  EXPECT_THROW(shm::Pool::attach(name), ConfigError);
}

}  // namespace
}  // namespace dmrt
