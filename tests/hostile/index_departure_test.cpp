// Crash-like departures: a DMTree compute node stops mid-operation without leave() (a peer
// declares it dead), and an HStore server is killed in the middle of a request batch. Every
// operation is recorded and the history must be linearizable.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "dmrt/check/history.h"
#include "dmrt/check/linearizability.h"
#include "dmrt/indexes/dmtree/dmtree.h"
#include "dmrt/runtime/scheduler.h"
#include "tests/runtime/test_cluster.h"
#include "tests/sherman/kv_checks.h"

namespace dmrt {
namespace {

using DTree = dmtree::Tree<ShmTransport>;
using testing::key_of_rank;
using testing::value_for;

// Three compute nodes. Node 2's clients run a third of their operations and stop; the last one
// takes a leaf lock and stops there (its node crashed mid-operation: no unlock, no leave()). Node 0
// then declares node 2 dead (a failure detector's verdict); nodes 0 and 1 keep running against the
// same keys and must recover the lock.
TEST(IndexDeparture, DmtreeComputeNodeCrashesHoldingALock) {
  dmtree::Options o;
  o.leaf_span = 8;
  o.internal_span = 6;
  const unsigned nodes = 3, threads = 3, fibers = 3;
  const size_t ops = 1500, key_space = 600;
  auto pool = testing::small_pool(1, nodes, uint64_t{256} << 20);
  auto cns = pool->config().compute_nodes();
  std::vector<std::unique_ptr<testing::ShmClient>> setup;
  std::vector<std::shared_ptr<DTree>> trees;
  for (unsigned i = 0; i < nodes; ++i) {
    setup.push_back(std::make_unique<testing::ShmClient>(shm::Endpoint(pool, cns[i], 900 + i)));
    trees.push_back(i == 0 ? DTree::create(*setup[0], o) : DTree::attach(*setup[i], o));
  }
  HistoryRecorder preload(999);
  {
    auto h = trees[0]->handle(*setup[0]);
    for (size_t i = 0; i < key_space; i += 2) {
      Key k = key_of_rank(i);
      ASSERT_TRUE(h.insert(k, value_for(k, 99, 0)));
      preload.insert(k, value_for(k, 99, 0), true, 0, 1);
    }
  }
  const Key locked_key = key_of_rank(4);  // preloaded: its leaf is the one left locked
  std::vector<HistoryRecorder> recs;
  for (unsigned i = 0; i < threads * fibers; ++i) recs.emplace_back(i, ops);
  std::atomic<unsigned> node2_stopped{0};
  std::atomic<bool> declared_dead{false};
  Scheduler sched({threads, fibers});
  sched.run([&](const WorkerId& w) {
    unsigned n = w.thread;
    testing::ShmClient c(shm::Endpoint(pool, cns[n], w.index));
    auto h = trees[n]->handle(c);
    HistoryRecorder& rec = recs[w.index];
    std::mt19937_64 rng(41 + w.index);
    std::string out;
    const size_t mine = n == 2 ? ops / 3 : ops;
    for (size_t i = 0; i < mine; ++i) {
      if (n != 2 && i == ops / 3) {  // the crash and the verdict happen while we run
        while (!declared_dead.load()) c.pause();
      }
      Key k = i % 7 == 0 ? locked_key : key_of_rank(rng() % key_space);
      std::string v = value_for(k, w.index, static_cast<uint32_t>(i));
      unsigned op = rng() % 100;
      uint64_t t0 = c.now_ns();
      if (op < 25) {
        bool ok = h.insert(k, v);
        rec.insert(k, v, ok, t0, c.now_ns());
      } else if (op < 55) {
        bool ok = h.update(k, v);
        rec.update(k, v, ok, t0, c.now_ns());
      } else if (op < 65) {
        bool ok = h.remove(k);
        rec.remove(k, ok, t0, c.now_ns());
      } else {
        bool ok = h.search(k, out);
        rec.search(k, ok, out, t0, c.now_ns());
      }
    }
    if (n == 2 && node2_stopped.fetch_add(1) + 1 == fibers) {
      h.abandon_lock_for_test(locked_key);  // the last client stops holding the lock
      // Node 2 is gone without leave(): node 0's setup client declares it dead.
      trees[0]->service().evict(*setup[0], cns[2]);
      declared_dead.store(true);
    }
  });
  ASSERT_TRUE(declared_dead.load());

  History hist;
  hist.append(preload);
  for (auto& r : recs) hist.append(r);
  CheckOptions co;
  co.check_scans = false;
  co.deadline_seconds = 120;
  CheckResult res = check_history(hist, co);
  EXPECT_EQ(res.verdict, Verdict::kLinearizable) << res.explain();

  double recovered = trees[0]->stats()["recovered_locks"] + trees[1]->stats()["recovered_locks"];
  EXPECT_GT(recovered, 0) << "the crashed node's lock was never recovered";
  // The lock is free for good: a write to the key completes and is read back.
  auto h = trees[1]->handle(*setup[1]);
  std::string v = value_for(locked_key, 77, 1), got;
  if (!h.update(locked_key, v)) {
    ASSERT_TRUE(h.insert(locked_key, v));
  }
  ASSERT_TRUE(h.search(locked_key, got));
  EXPECT_EQ(got, v);
  trees[0]->service().refresh(*setup[0]);
  for (uint64_t id = 0; id < 100; ++id) EXPECT_NE(trees[0]->service().owner(id), cns[2]);
  std::printf("crash mid-run: verdict %s, recovered locks %.0f, %zu operations\n",
              to_string(res.verdict), recovered, hist.size());
}

}  // namespace
}  // namespace dmrt
