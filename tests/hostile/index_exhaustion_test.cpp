// Pool exhaustion under 2 threads x 4 fibers on every index: each client ends with PoolExhausted
// (none waits forever for a lock the failing client held), and a fresh client can still update
// every acknowledged key afterwards (no lock word was left held).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "dmrt/indexes/chime/chime.h"
#include "dmrt/indexes/dmtree/dmtree.h"
#include "dmrt/indexes/race/race.h"
#include "dmrt/indexes/rolex/rolex.h"
#include "dmrt/indexes/sherman/sherman.h"
#include "dmrt/runtime/scheduler.h"
#include "tests/hstore/hstore_test_util.h"
#include "tests/runtime/test_cluster.h"
#include "tests/sherman/kv_checks.h"

namespace dmrt {
namespace {

using testing::key_of_rank;

constexpr unsigned kThreads = 2, kFibers = 4;

// A hang is the failure this suite is about: it must end the test with a message, not run into
// the meson timeout without saying which step hung.
class Watchdog {
 public:
  Watchdog(const char* what, std::chrono::seconds limit) {
    thread_ = std::thread([this, what, limit] {
      std::unique_lock l(mu_);
      if (!cv_.wait_for(l, limit, [this] { return done_; })) {
        std::fprintf(stderr, "hang: %s did not finish within %llds\n", what,
                     static_cast<long long>(limit.count()));
        std::abort();
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Small chunks, so that all clients run dry at about the same time (and some while holding a
// lock) rather than one after the other.
ClientOptions small_chunks() {
  ClientOptions o;
  o.allocator.chunk_bytes = 16 << 10;
  return o;
}

struct Outcome {
  unsigned exhausted = 0;  // workers that ended with PoolExhausted
  std::vector<Key> acked;  // keys whose insert returned true
};

// Every worker inserts fresh keys (ranks handed out in order, so workers share leaves) until
// its own insert throws PoolExhausted. `make_handle(client)` returns the index handle.
template <class MakeClient, class MakeHandle>
Outcome exhaust(MakeClient&& make_client, MakeHandle&& make_handle, size_t max_keys) {
  Outcome out;
  std::mutex mu;
  std::atomic<uint64_t> next{0};
  Scheduler sched({kThreads, kFibers});
  Watchdog dog("the exhausting run", std::chrono::seconds(120));
  sched.run([&](const WorkerId& w) {
    auto c = make_client(w.index);
    auto h = make_handle(*c);
    std::vector<Key> mine;
    bool dry = false;
    try {
      for (;;) {
        uint64_t r = next.fetch_add(1);
        if (r >= max_keys) break;
        Key k = key_of_rank(r);
        if (h.insert(k, testing::value_for(k, w.index, 0))) mine.push_back(k);
      }
    } catch (const PoolExhausted&) {
      dry = true;
    }
    std::lock_guard l(mu);
    out.exhausted += dry;
    out.acked.insert(out.acked.end(), mine.begin(), mine.end());
  });
  return out;
}

// After the run: every acknowledged key can be updated (its leaf lock is free) and read back.
template <class Handle>
void check_unlocked(Handle& h, const std::vector<Key>& acked) {
  Watchdog dog("updating the acknowledged keys", std::chrono::seconds(120));
  for (Key k : acked) {
    std::string v = testing::value_for(k, 99, 1);
    ASSERT_TRUE(h.update(k, v)) << k;
    std::string got;
    ASSERT_TRUE(h.search(k, got)) << k;
    EXPECT_EQ(got, v);
  }
}

void expect_all_exhausted(const Outcome& o, size_t max_keys) {
  EXPECT_EQ(o.exhausted, kThreads * kFibers) << "every client must see the error";
  EXPECT_GT(o.acked.size(), 0u);
  EXPECT_LT(o.acked.size(), max_keys) << "the pool never ran dry: the test proves nothing";
}

std::shared_ptr<shm::Pool> tiny_pool(uint64_t memory_bytes, unsigned compute_nodes = 1,
                                     uint64_t compute_bytes = uint64_t{8} << 20) {
  return testing::interleaved(
      shm::Pool::create(ClusterConfig::embedded(1, compute_nodes, memory_bytes, compute_bytes)));
}

template <class Pool>
auto client_maker(const Pool& pool) {
  return [pool](unsigned i) {
    NodeId home = pool->config().compute_nodes()[0];
    return std::make_unique<testing::ShmClient>(shm::Endpoint(pool, home, 10 + i), small_chunks());
  };
}

constexpr size_t kMaxKeys = 400000;

TEST(IndexExhaustion, Chime) {
  auto pool = tiny_pool(uint64_t{3} << 20);
  auto setup = testing::make_client(pool, 1);
  chime::Options o;
  o.span = 16;
  o.neighborhood = 4;
  o.hotspot_bytes = 1 << 16;
  auto t = chime::Tree<ShmTransport>::create(setup, o);
  auto out = exhaust(
      client_maker(pool), [&](testing::ShmClient& c) { return t->handle(c); }, kMaxKeys);
  expect_all_exhausted(out, kMaxKeys);
  auto h = t->handle(setup);
  check_unlocked(h, out.acked);
}

TEST(IndexExhaustion, Sherman) {
  for (bool local_table : {true, false}) {
    SCOPED_TRACE(local_table ? "local lock table" : "remote locks only");
    auto pool = tiny_pool(uint64_t{3} << 20);
    auto setup = testing::make_client(pool, 1);
    sherman::Options o;
    o.leaf_span = 8;
    o.local_lock_table = local_table;
    auto t = sherman::Tree<ShmTransport>::create(setup, o);
    auto out = exhaust(
        client_maker(pool), [&](testing::ShmClient& c) { return t->handle(c); }, kMaxKeys);
    expect_all_exhausted(out, kMaxKeys);
    auto h = t->handle(setup);
    check_unlocked(h, out.acked);
  }
}

TEST(IndexExhaustion, DmtreeCollaborativeTwoComputeNodes) {
  // Leaves live in an arena on the memory node and their tables on the compute nodes: the table
  // ids run out first (max_leaves), internal nodes then fill the memory node.
  auto pool = tiny_pool(uint64_t{4} << 20, 2);
  auto cns = pool->config().compute_nodes();
  using DTree = dmtree::Tree<ShmTransport>;
  dmtree::Options o;
  o.leaf_span = 8;
  o.internal_span = 6;
  o.max_leaves = 300;
  testing::ShmClient s0(shm::Endpoint(pool, cns[0], 1), small_chunks());
  testing::ShmClient s1(shm::Endpoint(pool, cns[1], 2), small_chunks());
  auto t0 = DTree::create(s0, o);
  auto t1 = DTree::attach(s1, o);
  auto out = exhaust(
      [&](unsigned i) {
        return std::make_unique<testing::ShmClient>(shm::Endpoint(pool, cns[i % 2], 10 + i),
                                                    small_chunks());
      },
      [&](testing::ShmClient& c) { return (c.home_node() == cns[0] ? t0 : t1)->handle(c); },
      kMaxKeys);
  expect_all_exhausted(out, kMaxKeys);
  auto h = t0->handle(s0);
  check_unlocked(h, out.acked);
}

TEST(IndexExhaustion, Race) {
  auto pool = tiny_pool(uint64_t{6} << 20);
  auto setup = testing::make_client(pool, 1);
  race::Options o;
  o.groups_per_subtable = 16;  // splits (a subtable allocated under its resize lock) all along
  auto idx = race::RaceIndex<ShmTransport>::create(setup, o);
  auto out = exhaust(
      client_maker(pool), [&](testing::ShmClient& c) { return idx->handle(c); }, kMaxKeys);
  expect_all_exhausted(out, kMaxKeys);
  auto h = idx->handle(setup);
  check_unlocked(h, out.acked);
}

TEST(IndexExhaustion, Rolex) {
  auto pool = tiny_pool(uint64_t{16} << 20);
  auto setup = testing::make_client(pool, 1);
  rolex::Options o;
  o.max_leaves = 200;
  o.compute_retrain_fallback = true;  // no retraining service in this test
  o.retrain_threshold = 32;
  auto idx = rolex::Index<ShmTransport>::create(setup, o);
  auto out = exhaust(
      client_maker(pool), [&](testing::ShmClient& c) { return idx->handle(c); }, kMaxKeys);
  expect_all_exhausted(out, kMaxKeys);
  auto h = idx->handle(setup);
  check_unlocked(h, out.acked);
}

TEST(IndexExhaustion, HStore) {
  hstore::Options o;
  o.expected_keys = 200;  // a small table: its overflow area fills, and inserts answer kFull
  testing::HStoreCluster cl(o, 2, 1, uint64_t{64} << 20);
  auto out = exhaust(
      [&](unsigned i) {
        return std::make_unique<testing::ShmClient>(shm::Endpoint(cl.pool, cl.compute(), 10 + i));
      },
      [&](testing::ShmClient& c) { return cl.index->handle(c); }, kMaxKeys);
  expect_all_exhausted(out, kMaxKeys);
  auto h = cl.index->handle(cl.setup);
  check_unlocked(h, out.acked);
}

}  // namespace
}  // namespace dmrt
