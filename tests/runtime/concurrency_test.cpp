// Many fibers on several threads hammering the same words: final values must be exact.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <vector>

#include "dmrt/runtime/scheduler.h"
#include "test_cluster.h"

namespace dmrt {
namespace {

constexpr unsigned kThreads = 4;
constexpr unsigned kFibers = 8;

struct Shared {
  std::shared_ptr<shm::Pool> pool = testing::small_pool(1, 1);
  GlobalAddress words;
  Shared() {
    auto c = testing::make_client(pool, 999);
    words = c.alloc(64 * 8);
  }
  NodeId home() const { return pool->config().compute_nodes()[0]; }
};

TEST(Concurrency, CasIncrementsAreExact) {
  Shared s;
  constexpr unsigned kPerFiber = 2000;
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& w) {
    testing::ShmClient c(shm::Endpoint(s.pool, s.home(), w.index));
    for (unsigned i = 0; i < kPerFiber; ++i) {
      uint64_t cur = c.read_value<uint64_t>(s.words);
      for (;;) {
        uint64_t old = c.cas(s.words, cur, cur + 1);
        if (old == cur) break;
        cur = old;
        c.pause();
      }
    }
  });
  auto c = testing::make_client(s.pool, 0);
  EXPECT_EQ(c.read_value<uint64_t>(s.words), uint64_t{kThreads} * kFibers * kPerFiber);
}

TEST(Concurrency, FaaFromManyFibersIsExact) {
  Shared s;
  constexpr unsigned kPerFiber = 5000;
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& w) {
    testing::ShmClient c(shm::Endpoint(s.pool, s.home(), w.index));
    for (unsigned i = 0; i < kPerFiber; ++i) {
      c.faa(s.words + 8, 3);
      if (i % 64 == 0) c.pause();
    }
  });
  auto c = testing::make_client(s.pool, 0);
  EXPECT_EQ(c.read_value<uint64_t>(s.words + 8), 3ull * kThreads * kFibers * kPerFiber);
}

TEST(Concurrency, MaskedCasOnDisjointFieldsKeepsEveryFieldExact) {
  // Eight 8-bit counters in one word, each owned by a group of fibers that increments only its
  // field with masked CAS. A plain CAS under a masked name would lose other fields' updates.
  Shared s;
  constexpr unsigned kPerFiber = 30;  // 4 fibers per field x 30 < 256: no field overflow
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& w) {
    testing::ShmClient c(shm::Endpoint(s.pool, s.home(), w.index));
    unsigned field = w.index % 8;
    uint64_t mask = uint64_t{0xff} << (8 * field);
    for (unsigned i = 0; i < kPerFiber; ++i) {
      uint64_t cur = c.read_value<uint64_t>(s.words + 16);
      for (;;) {
        uint64_t f = (cur & mask) >> (8 * field);
        uint64_t next = (f + 1) << (8 * field);
        uint64_t old = c.masked_cas(s.words + 16, cur, mask, next, mask);
        if (((old ^ cur) & mask) == 0) break;
        cur = old;
        c.pause();
      }
    }
  });
  auto c = testing::make_client(s.pool, 0);
  uint64_t v = c.read_value<uint64_t>(s.words + 16);
  unsigned per_field = kThreads * kFibers / 8 * kPerFiber;
  for (unsigned f = 0; f < 8; ++f) EXPECT_EQ((v >> (8 * f)) & 0xff, per_field) << "field " << f;
}

TEST(Concurrency, ReadsRacingWritesSeeWholeWords) {
  // A writer flips a 64-byte line between two patterns; readers may see a mix of lines, but
  // every 8-byte word is one of the two patterns: RDMA's 8-byte atomicity, nothing torn inside.
  Shared s;
  Scheduler sched({2, 4});
  std::atomic<bool> stop{false};
  sched.run([&](const WorkerId& w) {
    testing::ShmClient c(shm::Endpoint(s.pool, s.home(), w.index));
    if (w.index == 0) {
      uint64_t a[8], b[8];
      for (int i = 0; i < 8; ++i) a[i] = 0x1111111111111111ull, b[i] = 0x2222222222222222ull;
      for (int i = 0; i < 20000; ++i) {
        c.write(s.words + 64, i % 2 ? a : b, 64);
        if (i % 16 == 0) c.pause();
      }
      stop = true;
      return;
    }
    uint64_t r[8];
    while (!stop) {
      c.read(s.words + 64, r, 64);
      for (uint64_t x : r)
        ASSERT_TRUE(x == 0 || x == 0x1111111111111111ull || x == 0x2222222222222222ull);
      c.pause();
    }
  });
}

// A lock-releasing WRITE (Batch::release) stores its lock word after every other byte, whichever
// end of the buffer the word is at: the next holder must find the record its predecessor wrote
// whole. SMART's leaves put the lock in their first word; with that word stored first, a second
// writer took the lock while the first was still storing, and a leaf stayed torn for good (its
// checksum never held again: every reader of it retried for ever).
TEST(Concurrency, LockReleasesStoreTheLockWordLast) {
  for (LockWord at : {LockWord::kFirst, LockWord::kLast}) {
    SCOPED_TRACE(at == LockWord::kFirst ? "lock word first" : "lock word last");
    Shared s;
    constexpr unsigned kWords = 64, kRounds = 20000;
    const unsigned lock = at == LockWord::kFirst ? 0 : kWords - 1;
    const GlobalAddress lock_addr = s.words + 8ull * lock;
    std::atomic<uint64_t> torn{0};
    Scheduler sched({2, 1});
    sched.run([&](const WorkerId& w) {
      testing::ShmClient c(shm::Endpoint(s.pool, s.home(), w.index));
      std::array<uint64_t, kWords> rec{};
      for (unsigned i = 0; i < kRounds; ++i) {
        while (c.cas(lock_addr, 0, 1) != 0) c.pause();
        c.read(s.words, rec.data(), 8 * kWords);
        const uint64_t first = rec[lock == 0 ? 1 : 0];
        for (unsigned k = 0; k < kWords; ++k)
          if (k != lock && rec[k] != first) {
            torn.fetch_add(1, std::memory_order_relaxed);
            break;
          }
        rec.fill((uint64_t{w.index} << 32) | i);
        rec[lock] = 0;  // unlocked
        c.release(s.words, rec.data(), 8 * kWords, at);
      }
    });
    EXPECT_EQ(torn.load(), 0u) << "a holder found its predecessor's record half written";
  }
}

TEST(Concurrency, AllocationsFromManyClientsNeverOverlap) {
  Shared s;
  std::vector<std::vector<GlobalAddress>> got(kThreads * kFibers);
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& w) {
    testing::ShmClient c(shm::Endpoint(s.pool, s.home(), w.index), ClientOptions{{4096, 256}});
    for (int i = 0; i < 300; ++i) {
      GlobalAddress a = c.alloc(64);
      uint64_t tag = w.index;
      c.write(a, &tag, 8);
      got[w.index].push_back(a);
      if (i % 32 == 0) c.pause();
    }
  });
  auto c = testing::make_client(s.pool, 0);
  std::set<GlobalAddress> all;
  for (unsigned i = 0; i < got.size(); ++i)
    for (auto a : got[i]) {
      ASSERT_TRUE(all.insert(a).second);
      ASSERT_EQ(c.read_value<uint64_t>(a), i);
    }
}

}  // namespace
}  // namespace dmrt
