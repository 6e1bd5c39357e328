// ROLEX under threads x fibers with the retraining service: narrow-range synonym storm, stress,
// history.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <set>

#include "../sherman/kv_checks.h"
#include "dmrt/check/history.h"
#include "dmrt/check/linearizability.h"
#include "dmrt/policies/shm/service.h"
#include "rolex_test_util.h"

namespace dmrt {
namespace {

using testing::RIndex;

std::unique_ptr<shm::ServiceHost> start_service(const std::shared_ptr<shm::Pool>& pool) {
  return std::make_unique<shm::ServiceHost>(
      pool, pool->config().memory_nodes()[0], 1,
      [](ServiceContext<ShmTransport>& ctx) { rolex::retrain_service(ctx); });
}

// Writers insert thousands of keys between two adjacent bulk-loaded keys (one chain of one model:
// synonym leaves until the SLT fills, retraining after retraining) while readers search keys
// already acknowledged and scan the same range. Nothing acknowledged may be missing, ever.
TEST(RolexConcurrency, NarrowRangeSynonymsAndRetrainingsUnderReaders) {
  auto pool = testing::small_pool(1, 2, uint64_t{256} << 20);
  auto cns = pool->config().compute_nodes();
  auto service = start_service(pool);
  testing::ShmClient c0(shm::Endpoint(pool, cns[0], 500)), c1(shm::Endpoint(pool, cns[1], 501));
  std::vector<Key> bulk;
  for (Key k = 1; k <= 4000; ++k) bulk.push_back(k * 1'000'000);
  rolex::Options o;  // paper geometry: 16 slots, epsilon 16, retrain at 2^7 synonyms
  auto i0 = RIndex::create(c0, o, bulk);
  auto i1 = RIndex::attach(c1, o);
  constexpr unsigned kThreads = 2, kFibers = 4, kWriters = 4, kPerWriter = 4000;
  const Key lo = 2000 * 1'000'000ull;  // all inserts fall in (lo, lo + 1e6)
  auto key_of = [&](unsigned w, size_t i) { return lo + 1 + (i * kWriters + w) * 7; };
  std::array<std::atomic<size_t>, kWriters> acked{};
  std::atomic<size_t> searches{0}, scans{0};
  std::atomic<bool> failed{false};
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& wid) {
    bool second = wid.thread == 1;
    testing::ShmClient c(shm::Endpoint(pool, cns[second], wid.index));
    auto h = (second ? i1 : i0)->handle(c);
    std::string out;
    if (wid.fiber < 2) {  // writer
      unsigned w = wid.thread * 2 + wid.fiber;
      try {
        for (size_t i = 0; i < kPerWriter; ++i) {
          Key k = key_of(w, i);
          if (!h.insert(k, testing::value_for(k, w, 0))) throw std::runtime_error("insert refused");
          acked[w].store(i + 1, std::memory_order_release);
          c.pause();
        }
      } catch (...) {
        failed = true;
        throw;
      }
      return;
    }
    std::mt19937_64 rng(wid.index);
    std::vector<std::pair<Key, std::string>> rows;
    auto done = [&] {
      for (auto& a : acked)
        if (a.load() < kPerWriter) return false;
      return true;
    };
    while (!done() && !failed) {
      c.pause();  // shm verbs never suspend: yield so the writers on this thread run
      unsigned w = rng() % kWriters;
      size_t n = acked[w].load(std::memory_order_acquire);
      if (n > 0) {
        Key k = key_of(w, rng() % n);
        if (!h.search(k, out) || out != testing::value_for(k, w, 0))
          throw std::runtime_error("acknowledged key " + std::to_string(k) + " not found");
        ++searches;
      }
      // Scan across the hot range: every key acknowledged before the scan and inside the rows'
      // key span must be in the rows; the bulk keys around must be there too.
      std::array<size_t, kWriters> before;
      for (unsigned x = 0; x < kWriters; ++x) before[x] = acked[x].load(std::memory_order_acquire);
      Key from = lo - 1'000'000 + (rng() % 2) * (1'000'000 + rng() % 20000);
      h.scan(from, 200, rows);
      ++scans;
      if (rows.empty()) throw std::runtime_error("empty scan");
      std::set<Key> got;
      for (size_t j = 0; j < rows.size(); ++j) {
        if (rows[j].first < from || (j && rows[j].first <= rows[j - 1].first))
          throw std::runtime_error("scan out of order");
        got.insert(rows[j].first);
      }
      Key last = rows.back().first;
      for (unsigned x = 0; x < kWriters; ++x)
        for (size_t i = 0; i < before[x]; ++i) {
          Key k = key_of(x, i);
          if (k >= from && k <= last && !got.count(k))
            throw std::runtime_error("scan missed acknowledged key " + std::to_string(k));
        }
      for (Key b = (from + 999'999) / 1'000'000 * 1'000'000; b <= last; b += 1'000'000)
        if (!got.count(b)) throw std::runtime_error("scan missed bulk key " + std::to_string(b));
    }
  });
  service->stop();
  auto h = i0->handle(c0);
  std::string out;
  for (unsigned w = 0; w < kWriters; ++w)
    for (size_t i = 0; i < kPerWriter; ++i) ASSERT_TRUE(h.search(key_of(w, i), out));
  for (Key k : bulk) ASSERT_TRUE(h.search(k, out));
  auto s = i0->stats(c0);
  auto s1 = i1->stats();
  std::printf(
      "narrow-range storm: %zu inserts, %zu searches, %zu scans; retrainings %.0f, synonym leaves "
      "%.0f, "
      "retrain requests %.0f, full-SLT waits %.0f+%.0f, model refreshes %.0f+%.0f\n",
      size_t{kWriters} * kPerWriter, searches.load(), scans.load(), s["retrainings"],
      s["synonym_leaves"], s["retrain_requests"], s["full_slt_waits"], s1["full_slt_waits"],
      s["model_refreshes"], s1["model_refreshes"]);
  EXPECT_GE(s["retrainings"], 2);
  EXPECT_GT(s["synonym_leaves"], 255);
}

struct Ctx {
  testing::ShmClient client;
  RIndex::Handle handle;
  Ctx(std::shared_ptr<shm::Pool> p, NodeId home, uint32_t id, const std::shared_ptr<RIndex>& t)
      : client(shm::Endpoint(p, home, id)), handle(t->handle(client)) {}
};

void run_stress(rolex::Options o, testing::StressConfig cfg) {
  auto pool = testing::small_pool(1, 2, uint64_t{256} << 20);
  auto cns = pool->config().compute_nodes();
  auto service = start_service(pool);
  testing::ShmClient c0(shm::Endpoint(pool, cns[0], 500)), c1(shm::Endpoint(pool, cns[1], 501));
  auto t0 = RIndex::create(c0, o);
  auto t1 = RIndex::attach(c1, o);
  auto logs = testing::stress_run(cfg, [&](const WorkerId& w) {
    bool second = w.thread % 2 == 1;
    return std::make_unique<Ctx>(pool, cns[second], w.index, second ? t1 : t0);
  });
  service->stop();
  auto h = t0->handle(c0);
  EXPECT_EQ(testing::final_state_error(h, logs, cfg.key_space), "");
  auto s = t0->stats(c0);
  auto s1 = t1->stats();
  const double shared =
      s["rdwc_delegated"] + s["rdwc_combined"] + s1["rdwc_delegated"] + s1["rdwc_combined"];
  // Fibers interleave inside operations (testing::small_pool): zipfian 0.99 makes them meet.
  if (o.rdwc) {
    EXPECT_GT(shared, 0);
  }
  std::printf(
      "rolex stress: retrainings %.0f, synonym leaves %.0f, lock retries %.0f+%.0f, read retries "
      "%.0f+%.0f, rdwc shared %.0f\n",
      s["retrainings"], s["synonym_leaves"], s["lock_retries"], s1["lock_retries"],
      s["read_retries"], s1["read_retries"], shared);
}

TEST(RolexConcurrency, ZipfianMixedOpsTwoComputeNodes) {
  rolex::Options o = testing::small_retraining_options(8);
  run_stress(o, {});
}

// ROLEX-Indirect (CHIME's Fig. 13): pairs point to KV blocks, written out of place.
TEST(RolexConcurrency, ZipfianIndirectWithRdwc) {
  rolex::Options o = testing::small_retraining_options(8);
  o.indirect = true;
  o.rdwc = true;
  run_stress(o, {});
}

// RDWC on (the CHIME paper's setting for ROLEX), with retrainings under way.
TEST(RolexConcurrency, ZipfianWithRdwc) {
  rolex::Options o = testing::small_retraining_options(8);
  o.rdwc = true;
  testing::StressConfig cfg;
  cfg.fibers = 8;
  cfg.ops_per_worker = 1500;
  run_stress(o, cfg);
}

TEST(RolexConcurrency, CombinedLockReadWholeRangeManyFibers) {
  rolex::Options o;
  o.leaf_slots = 4;
  o.epsilon = 4;
  o.retrain_threshold = 8;
  o.combine_lock_and_read = true;
  o.read_whole_range = true;
  testing::StressConfig cfg;
  cfg.fibers = 8;
  cfg.ops_per_worker = 1500;
  run_stress(o, cfg);
}

// Records every operation with invoke/response times and checks linearizability.
TEST(RolexConcurrency, HistoryIsLinearizable) {
  auto pool = testing::small_pool(1, 2, uint64_t{128} << 20);
  auto cns = pool->config().compute_nodes();
  auto service = start_service(pool);
  testing::ShmClient c0(shm::Endpoint(pool, cns[0], 500)), c1(shm::Endpoint(pool, cns[1], 501));
  rolex::Options o;
  o.leaf_slots = 4;
  o.epsilon = 4;
  o.retrain_threshold = 8;
  auto t0 = RIndex::create(c0, o);
  auto t1 = RIndex::attach(c1, o);
  constexpr unsigned kThreads = 2, kFibers = 4;
  std::vector<HistoryRecorder> recs;
  for (unsigned i = 0; i < kThreads * kFibers; ++i) recs.emplace_back(i, 2000);
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& w) {
    bool second = w.thread == 1;
    testing::ShmClient c(shm::Endpoint(pool, cns[second], w.index));
    auto h = (second ? t1 : t0)->handle(c);
    auto& rec = recs[w.index];
    std::mt19937_64 rng(99 + w.index);
    std::string out;
    std::vector<std::pair<Key, std::string>> rows;
    for (uint32_t i = 0; i < 1500; ++i) {
      Key k = 1 + rng() % 120 * 1000;
      std::string v = testing::value_for(k, w.index, i);
      unsigned op = rng() % 100;
      uint64_t t = c.now_ns();
      if (op < 35) {
        bool ok = h.insert(k, v);
        rec.insert(k, v, ok, t, c.now_ns());
      } else if (op < 50) {
        bool ok = h.update(k, v);
        rec.update(k, v, ok, t, c.now_ns());
      } else if (op < 62) {
        bool ok = h.remove(k);
        rec.remove(k, ok, t, c.now_ns());
      } else if (op < 70) {
        h.scan(k, 10, rows);
        rec.scan(k, 10, rows, t, c.now_ns());
      } else {
        bool ok = h.search(k, out);
        rec.search(k, ok, out, t, c.now_ns());
      }
    }
  });
  service->stop();
  History hist;
  for (auto& r : recs) hist.append(std::move(r));
  CheckOptions co;
  co.deadline_seconds = 20;
  auto res = check_history(hist, co);
  std::printf("history: %zu ops, verdict %s, keys %llu, scans %llu, retrainings %.0f\n",
              hist.size(), to_string(res.verdict), (unsigned long long)res.keys_checked,
              (unsigned long long)res.scans_checked, t0->stats(c0)["retrainings"]);
  EXPECT_EQ(res.verdict, Verdict::kLinearizable) << res.explain();
}

}  // namespace
}  // namespace dmrt
