// Fault proofs: test-only fault switches that no other test used inject their bug into a
// concurrent run, and the linearizability checker (not a final-state sweep) must report a
// violation; the same run without the fault is linearizable. Compiled only with
// DMRT_FAULT_INJECTION (tests/hostile/meson.build).
// CHIME skip_bitmap_check, Sherman skip_validation and ROLEX skip_validation need a reader's copy
// torn by a concurrent writer's, which plain shm runs (memcpy on 2 contended cores) produce too
// rarely to be a reliable test: their runs use one thread of fibers on a pool with torn reads
// (shm::Pool::set_torn_reads), so every multi-word READ yields between two pieces and is torn by
// whichever writer runs then, deterministically for a seed. Their clean runs, torn the same way,
// show that the indexes' own validation handles it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/workload/zipfian.h"
#include "dmrt/check/history.h"
#include "dmrt/check/linearizability.h"
#include "dmrt/indexes/chime/chime.h"
#include "dmrt/indexes/dmtree/dmtree.h"
#include "dmrt/indexes/rolex/rolex.h"
#include "dmrt/indexes/sherman/sherman.h"
#include "dmrt/runtime/scheduler.h"
#include "tests/runtime/test_cluster.h"

namespace dmrt {
namespace {

using testing::ShmClient;

// What one attempt runs: T threads x F fibers of random operations on a small zipfian key
// space, every operation recorded. `make(worker)` returns the worker's client and an object
// with search/insert/update/remove.
struct Attempt {
  unsigned threads = 2, fibers = 8;
  uint64_t keys = 48;
  size_t ops_per_worker = 600;
  uint64_t seed = 1;
  unsigned search = 50, insert = 25, update = 15, remove = 10;
};

template <class Make>
CheckResult run_recorded(const Attempt& a, Make&& make) {
  Scheduler sched({a.threads, a.fibers});
  std::vector<HistoryRecorder> recs(sched.workers());
  bench::Zipfian proto(a.keys, 0.9);
  sched.run([&](const WorkerId& w) {
    auto [client, holder] = make(w.index);
    auto& c = *client;
    auto& h = *holder;
    HistoryRecorder rec(w.index, a.ops_per_worker);
    std::mt19937_64 rng(a.seed * 0x9e3779b97f4a7c15ull + w.index);
    bench::Zipfian zipf = proto;
    std::string out;
    const unsigned total = a.search + a.insert + a.update + a.remove;
    for (size_t i = 0; i < a.ops_per_worker && !sched.stop_requested(); ++i) {
      Key k = zipf(rng) + 1;
      unsigned p = static_cast<unsigned>(rng() % total);
      std::string v(8, '\0');  // the indexes' default value_size: stored at exactly that size
      uint64_t tag = uint64_t{w.index} << 32 | i;
      std::memcpy(v.data(), &tag, 8);
      uint64_t t0 = c.now_ns();
      if (p < a.search) {
        bool f = h.search(k, out);
        rec.search(k, f, out, t0, c.now_ns());
      } else if (p < a.search + a.insert) {
        bool ok = h.insert(k, v);
        rec.insert(k, v, ok, t0, c.now_ns());
      } else if (p < a.search + a.insert + a.update) {
        bool ok = h.update(k, v);
        rec.update(k, v, ok, t0, c.now_ns());
      } else {
        bool ok = h.remove(k);
        rec.remove(k, ok, t0, c.now_ns());
      }
      if (rng() % 3 == 0) c.pause();
    }
    recs[w.index] = std::move(rec);
  });
  History hist = merge_histories(recs);
  CheckOptions co;
  co.shrink = false;
  return check_history(hist, co);
}

// Runs attempts with fresh seeds until the checker reports a violation (at most `attempts`).
// An attempt that the index survives unharmed is possible (the fault needs a race to bite),
// so the proof is: some bounded number of attempts is caught.
template <class RunOnce>
void expect_caught(const char* what, unsigned attempts, RunOnce&& run_once) {
  for (unsigned i = 0; i < attempts; ++i) {
    CheckResult r = run_once(uint64_t{100} + i);
    ASSERT_NE(r.verdict, Verdict::kUnknown) << what << ": " << r.explain();
    if (r.verdict == Verdict::kViolation) {
      std::printf("%s: caught by the checker in attempt %u (key %llu)\n", what, i + 1,
                  static_cast<unsigned long long>(r.failing_key.value_or(0)));
      return;
    }
  }
  FAIL() << what << ": the checker found no violation in " << attempts << " attempts";
}

std::shared_ptr<shm::Pool> pool_of(unsigned compute_nodes) {
  return testing::interleaved(shm::Pool::create(
      ClusterConfig::embedded(1, compute_nodes, uint64_t{128} << 20, uint64_t{16} << 20)));
}

// ROLEX: two compute nodes, each with its own model cache; every client alternates between
// them so that the caches go stale. With `fault` set, the stale synonym table is trusted.
CheckResult rolex_attempt(uint64_t seed, const std::function<void(rolex::Options&)>& fault) {
  auto pool = pool_of(2);
  auto cns = pool->config().compute_nodes();
  ShmClient s0(shm::Endpoint(pool, cns[0], 1)), s1(shm::Endpoint(pool, cns[1], 2));
  using RIndex = rolex::Index<ShmTransport>;
  rolex::Options o;
  o.leaf_slots = 4;
  o.group_leaves = 4;
  o.retrain_threshold = 250;  // no retraining: synonym leaves pile up in the SLT
  o.key_space = 64;
  o.initial_groups = 2;
  o.expected_keys = 4096;
  fault(o);
  auto i0 = RIndex::create(s0, o);
  auto i1 = RIndex::attach(s1, o);
  Attempt a;
  a.seed = seed;
  a.insert = 40;
  a.remove = 5;
  a.search = 45;
  a.update = 10;
  return run_recorded(a, [&](unsigned i) {
    bool second = i % 2;
    auto c = std::make_unique<ShmClient>(shm::Endpoint(pool, cns[second], 10 + i));
    auto h = std::make_unique<RIndex::Handle>((second ? i1 : i0)->handle(*c));
    return std::make_pair(std::move(c), std::move(h));
  });
}

TEST(IndexFaults, RolexSkipSlotUseCheck) {
  // The same run without the fault is linearizable: the violation is the fault's.
  CheckResult clean = rolex_attempt(100, [](rolex::Options&) {});
  EXPECT_EQ(clean.verdict, Verdict::kLinearizable) << clean.explain();
  expect_caught("rolex skip_slot_use_check", 20, [](uint64_t seed) {
    return rolex_attempt(seed, [](rolex::Options& o) { o.faults.skip_slot_use_check = true; });
  });
}

// DMTree: searches on a compute node that keeps cached copies of a peer's tables trust a
// negative answer from a stale copy instead of confirming it with the primary.
CheckResult dmtree_attempt(uint64_t seed, bool fault) {
  auto pool = pool_of(2);
  auto cns = pool->config().compute_nodes();
  using DTree = dmtree::Tree<ShmTransport>;
  dmtree::Options o;
  o.leaf_span = 8;
  o.internal_span = 6;
  o.read_delegation = false;
  o.write_combining = false;
  o.faults.skip_negative_confirm = fault;
  ShmClient s0(shm::Endpoint(pool, cns[0], 1)), s1(shm::Endpoint(pool, cns[1], 2));
  auto t0 = DTree::create(s0, o);
  auto t1 = DTree::attach(s1, o);
  Attempt a;
  a.seed = seed;
  return run_recorded(a, [&](unsigned i) {
    bool second = i % 2;
    auto c = std::make_unique<ShmClient>(shm::Endpoint(pool, cns[second], 10 + i));
    auto h = std::make_unique<DTree::Handle>((second ? t1 : t0)->handle(*c));
    return std::make_pair(std::move(c), std::move(h));
  });
}

TEST(IndexFaults, DmtreeSkipNegativeConfirm) {
  // The same run without the fault is linearizable: the violation is the fault's.
  CheckResult clean = dmtree_attempt(100, false);
  EXPECT_EQ(clean.verdict, Verdict::kLinearizable) << clean.explain();
  expect_caught("dmtree skip_negative_confirm", 20,
                [](uint64_t seed) { return dmtree_attempt(seed, true); });
}

// Torn-read proofs. One thread of fibers, so that a run is a deterministic function of its seed,
// on a pool with torn reads (shm::Pool::set_torn_reads): every multi-word READ yields between two
// pieces and the writer fibers run in the middle. With the fault the index trusts a torn copy;
// without it the same run is linearizable, which also shows the real validation handles it.
Attempt torn_attempt(uint64_t seed) {
  Attempt a;
  a.threads = 1;
  a.fibers = 12;
  a.seed = seed;
  return a;
}

std::shared_ptr<shm::Pool> torn_pool() {
  auto pool = pool_of(1);
  pool->set_torn_reads(true);
  return pool;
}

template <class Index, class Options>
CheckResult btree_torn_attempt(uint64_t seed, const Options& o) {
  auto pool = torn_pool();
  ShmClient s(shm::Endpoint(pool, pool->config().compute_nodes()[0], 1));
  auto t = Index::create(s, o);
  return run_recorded(torn_attempt(seed), [&](unsigned i) {
    auto c =
        std::make_unique<ShmClient>(shm::Endpoint(pool, pool->config().compute_nodes()[0], 10 + i));
    auto h = std::make_unique<typename Index::Handle>(t->handle(*c));
    return std::make_pair(std::move(c), std::move(h));
  });
}

// CHIME: inserts move keys through hopscotch neighborhoods. A search torn across such a move
// can see a key's new slot not yet written and its old slot already reused, every entry sealed
// under one node version; only the level-3 check (the home's hop bitmap) makes it read again.
// The run is shaped for that: small leaves read whole (hopscotch_leaf off: a neighborhood that
// wraps past the leaf's end is then read out of its circular order, so either piece order can
// hide a moved key), `kResidents` keys inserted first that never change and that 8 fibers search,
// and 4 fibers inserting and removing other keys, which pushes the residents through their
// neighborhoods while the leaves fill and split. A resident not found is a violation.
CheckResult chime_attempt(uint64_t seed, bool fault) {
  constexpr Key kResidents = 16, kMovers = 16;
  constexpr unsigned kReaders = 8, kWriters = 4;
  constexpr size_t kOps = 800;
  auto pool = torn_pool();
  NodeId cn = pool->config().compute_nodes()[0];
  chime::Options o;
  o.span = 24;
  o.neighborhood = 8;
  o.internal_span = 8;
  o.hopscotch_leaf = false;
  o.speculative_read = false;  // every search reads the leaf
  o.rdwc = false;              // ... itself: a delegated search shares another one's read
  o.faults.skip_bitmap_check = fault;
  ShmClient s(shm::Endpoint(pool, cn, 1));
  auto t = chime::Tree<ShmTransport>::create(s, o);
  std::vector<HistoryRecorder> recs(kReaders + kWriters + 1);
  {
    auto h = t->handle(s);
    HistoryRecorder rec(kReaders + kWriters, kResidents);
    for (Key k = 1; k <= kResidents; ++k) {
      std::string v(8, '\0');
      std::memcpy(v.data(), &k, 8);
      uint64_t t0 = s.now_ns();
      bool ok = h.insert(k, v);
      rec.insert(k, v, ok, t0, s.now_ns());
    }
    recs[kReaders + kWriters] = std::move(rec);
  }
  Scheduler sched({1, kReaders + kWriters});
  sched.run([&](const WorkerId& w) {
    ShmClient c(shm::Endpoint(pool, cn, 10 + w.index));
    auto h = t->handle(c);
    HistoryRecorder rec(w.index, kOps);
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + w.index);
    std::string out;
    for (size_t i = 0; i < kOps && !sched.stop_requested(); ++i) {
      // Fibers step in lockstep (one step per round of the scheduler): 0-3 random pauses keep
      // the readers' torn READs from always falling in the same phase as the writers' WRITEs
      // (with 0-1, a writer taking its lock and leaf in one round trip was caught only in
      // attempt 66).
      for (unsigned p = rng() % 4; p > 0; --p) c.pause();
      uint64_t t0 = c.now_ns();
      if (w.index < kReaders) {
        Key k = 1 + rng() % kResidents;
        bool f = h.search(k, out);
        rec.search(k, f, out, t0, c.now_ns());
        continue;
      }
      Key k = kResidents + 1 + rng() % kMovers;
      if (rng() % 2) {
        std::string v(8, '\0');
        uint64_t tag = uint64_t{w.index} << 32 | i;
        std::memcpy(v.data(), &tag, 8);
        bool ok = h.insert(k, v);
        rec.insert(k, v, ok, t0, c.now_ns());
      } else {
        bool ok = h.remove(k);
        rec.remove(k, ok, t0, c.now_ns());
      }
    }
    recs[w.index] = std::move(rec);
  });
  History hist = merge_histories(recs);
  CheckOptions co;
  co.shrink = false;
  return check_history(hist, co);
}

TEST(IndexFaults, ChimeSkipBitmapCheck) {
  CheckResult clean = chime_attempt(100, false);
  EXPECT_EQ(clean.verdict, Verdict::kLinearizable) << clean.explain();
  // The moves happen while the leaves fill and split, early in a run: attempts are short.
  expect_caught("chime skip_bitmap_check", 40,
                [](uint64_t seed) { return chime_attempt(seed, true); });
}

// ROLEX: a search reads its leaves in one batch; torn across an insert's shift of the sorted
// slots, a leaf copy pairs keys with other keys' values or loses a key, which only the leaf's
// checksum reveals.
CheckResult rolex_torn_attempt(uint64_t seed, bool fault) {
  auto pool = torn_pool();
  ShmClient s(shm::Endpoint(pool, pool->config().compute_nodes()[0], 1));
  using RIndex = rolex::Index<ShmTransport>;
  rolex::Options o;
  o.leaf_slots = 8;
  o.group_leaves = 4;
  o.key_space = 64;
  o.initial_groups = 2;
  o.expected_keys = 4096;
  o.faults.skip_validation = fault;
  auto x = RIndex::create(s, o);
  return run_recorded(torn_attempt(seed), [&](unsigned i) {
    auto c =
        std::make_unique<ShmClient>(shm::Endpoint(pool, pool->config().compute_nodes()[0], 10 + i));
    auto h = std::make_unique<RIndex::Handle>(x->handle(*c));
    return std::make_pair(std::move(c), std::move(h));
  });
}

TEST(IndexFaults, RolexSkipValidation) {
  CheckResult clean = rolex_torn_attempt(100, false);
  EXPECT_EQ(clean.verdict, Verdict::kLinearizable) << clean.explain();
  expect_caught("rolex skip_validation", 10,
                [](uint64_t seed) { return rolex_torn_attempt(seed, true); });
}

// Sherman: a search reads the whole leaf in one READ; torn across an entry write or a split, the
// copy mixes two versions of the leaf, which only the seals and node versions reveal.
CheckResult sherman_attempt(uint64_t seed, bool fault) {
  sherman::Options o;
  o.leaf_span = 8;
  o.internal_span = 8;
  o.faults.skip_validation = fault;
  return btree_torn_attempt<sherman::Tree<ShmTransport>>(seed, o);
}

TEST(IndexFaults, ShermanSkipValidation) {
  CheckResult clean = sherman_attempt(100, false);
  EXPECT_EQ(clean.verdict, Verdict::kLinearizable) << clean.explain();
  expect_caught("sherman skip_validation", 10,
                [](uint64_t seed) { return sherman_attempt(seed, true); });
}

}  // namespace
}  // namespace dmrt
