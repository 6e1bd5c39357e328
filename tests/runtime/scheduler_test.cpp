#include "dmrt/runtime/scheduler.h"

#include <gtest/gtest.h>

#include <boost/fiber/all.hpp>
#include <mutex>
#include <set>
#include <thread>

namespace dmrt {

TEST(Scheduler, RunsEveryWorkerOnceWithDenseIds) {
  Scheduler s({3, 5});
  std::mutex mu;
  std::set<unsigned> seen;
  std::set<std::thread::id> threads;
  s.run([&](const WorkerId& w) {
    boost::this_fiber::yield();
    std::lock_guard g(mu);
    EXPECT_EQ(w.index, w.thread * 5 + w.fiber);
    seen.insert(w.index);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(seen.size(), 15u);
  EXPECT_EQ(*seen.rbegin(), 14u);
  EXPECT_EQ(threads.size(), 3u);
}

TEST(Scheduler, FibersOfAThreadInterleave) {
  Scheduler s({1, 2});
  std::vector<int> order;
  s.run([&](const WorkerId& w) {
    for (int i = 0; i < 3; ++i) {
      order.push_back(static_cast<int>(w.fiber));
      boost::this_fiber::yield();
    }
  });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 0, 1, 0, 1}));
}

TEST(Scheduler, WorkerExceptionIsReportedNotSwallowed) {
  Scheduler s({2, 4});
  std::atomic<int> finished{0};
  try {
    s.run([&](const WorkerId& w) {
      if (w.index == 6) throw std::runtime_error("boom in worker");
      while (!s.stop_requested()) boost::this_fiber::yield();
      ++finished;
    });
    FAIL() << "no exception";
  } catch (const WorkerFailure& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("worker 6"), std::string::npos) << what;
    EXPECT_NE(what.find("boom in worker"), std::string::npos) << what;
    EXPECT_EQ(e.failed(), 1u);
  }
  EXPECT_EQ(finished.load(), 7);  // the others were told to stop and did
}

TEST(Scheduler, HooksRunOnEachThreadAroundTheWorkers) {
  Scheduler s({2, 3});
  std::atomic<int> started{0}, stopped{0}, ran{0};
  std::atomic<int> ran_on[2] = {0, 0};
  ThreadHooks hooks;
  hooks.on_start = [&](unsigned t) {
    EXPECT_EQ(ran_on[t].load(), 0);  // before this thread's workers
    ++started;
  };
  hooks.on_stop = [&](unsigned t) {
    // After this thread's three workers. (The other thread may still be running its own: a
    // check of the total here was a race.)
    EXPECT_EQ(ran_on[t].load(), 3);
    ++stopped;
  };
  s.run(
      [&](const WorkerId& w) {
        ++ran;
        ++ran_on[w.thread];
      },
      hooks);
  EXPECT_EQ(started.load(), 2);
  EXPECT_EQ(stopped.load(), 2);
  EXPECT_EQ(ran.load(), 6);
}

TEST(Scheduler, RejectsEmptyShapes) {
  EXPECT_THROW(Scheduler({0, 1}), ConfigError);
}

}  // namespace dmrt
