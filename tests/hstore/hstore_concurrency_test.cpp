// HStore under threads x fibers with both servers: harness stress (linearizability, scans), fault
// proofs, and a server's index killed during a concurrent run, rebuilt, nothing acknowledged lost.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "dmrt/check/history.h"
#include "dmrt/check/linearizability.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/scheduler.h"
#include "hstore_test_util.h"
#include "tests/harness/kv_suites.h"

namespace dmrt {
namespace {

using testing::HStoreCluster;
using testing::scaled;

hstore::Options stress_options() {
  hstore::Options o;
  o.expected_keys = 128;  // small table: overflow chains during the run
  o.load_factor = 1.0;
  o.overflow_fraction = 1.0;
  o.logs = 2;
  o.partitions = 2;
  return o;
}

TEST(HStoreHarness, StressIsLinearizableWithScans) {
  HStoreCluster cl(stress_options());
  harness::StressOptions so;
  so.threads = 2;
  so.fibers = 4;
  so.keys = 256;
  so.ops_per_worker = scaled(1500);
  harness::stress_test(
      cl.pool, [&](harness::ShmClient& c) { return cl.index->handle(c); }, so);
  auto s = cl.index->stats(cl.setup);
  std::printf(
      "batches %.0f (mean %.2f entries), sls applied async %.0f / by drain %.0f, scans %.0f\n",
      s["batches"], s["batch_entries_mean"], s["sls_applied_async"], s["sls_applied_by_drain"],
      s["sls_scans"]);
}

// A lagging SLS (entries stay in its log 2 ms): scans must drain it to see acknowledged writes.
TEST(HStoreHarness, LaggingSkiplistScansStillSeeAcknowledgedWrites) {
  auto o = stress_options();
  o.apply_lag_ns = 2'000'000;
  HStoreCluster cl(o);
  harness::StressOptions so;
  so.threads = 2;
  so.fibers = 4;
  so.keys = 64;
  so.ops_per_worker = scaled(1000);
  so.mix = {30, 25, 20, 10, 15};
  so.seed = 7;
  harness::stress_test(
      cl.pool, [&](harness::ShmClient& c) { return cl.index->handle(c); }, so);
  auto s = cl.index->stats(cl.setup);
  EXPECT_GT(s["sls_applied_by_drain"], 0);
}

// Byte keys (key_size 40) under 2 threads x 4 fibers: each worker owns the keys starting with its
// letter (mixed lengths, 0x00 / 0xff runs, prefixes of each other) and checks every answer and
// every scan of its range against its own model; all of them race insert / remove on hot keys that
// are prefixes of each other. Scans come back in strict byte order; the final contents match.
TEST(HStoreByteKeys, ConcurrentWorkersWithByteKeys) {
  auto o = stress_options();
  o.key_size = 40;
  HStoreCluster cl(o);
  constexpr unsigned kThreads = 2, kFibers = 4, kWorkers = kThreads * kFibers, kOwn = 60, kHot = 8;
  const size_t ops = scaled(600);
  auto own_key = [](unsigned wi, unsigned j) {
    std::string k(1, static_cast<char>('A' + wi));
    k += std::string(j % 13, j % 2 ? '\xff' : '\0');
    if (j % 3) k += "x" + std::to_string(j);
    return k;  // j % 3 == 0: a run of one byte, a prefix of the longer runs
  };
  auto hot_key = [](unsigned i) { return "hot" + std::string(i, '\0'); };
  std::vector<std::map<std::string, std::string>> model(kWorkers);
  std::vector<std::array<int64_t, kHot>> hot_net(kWorkers);  // inserts - removes that succeeded
  for (auto& a : hot_net) a.fill(0);
  std::atomic<size_t> scans{0};
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& w) {
    testing::ShmClient c(shm::Endpoint(cl.pool, cl.compute(0), 1 + w.index));
    auto h = cl.index->handle(c);
    const unsigned wi = w.index;
    auto& mine = model[wi];
    std::mt19937_64 rng(99 + wi);
    std::string out;
    std::vector<std::pair<std::string, std::string>> rows;
    const std::string lo(1, static_cast<char>('A' + wi));
    for (size_t i = 0; i < ops; ++i) {
      const unsigned r = rng() % 20;
      if (r < 3) {  // a hot key, raced by everyone
        unsigned hk = rng() % kHot;
        if (rng() % 2)
          hot_net[wi][hk] += h.insert(KeyView(hot_key(hk)), "h" + std::to_string(wi));
        else
          hot_net[wi][hk] -= h.remove(KeyView(hot_key(hk)));
        continue;
      }
      if (r < 5) {  // my range: exactly my model's first rows
        h.scan(KeyView(lo), 12, rows);
        auto it = mine.begin();
        size_t n = 0;
        for (; n < rows.size() && rows[n].first.compare(0, 1, lo) == 0; ++n, ++it) {
          ASSERT_NE(it, mine.end()) << "worker " << wi;
          ASSERT_EQ(rows[n].first, it->first) << "worker " << wi;
          ASSERT_EQ(rows[n].second, it->second) << "worker " << wi;
        }
        ASSERT_EQ(n, std::min<size_t>(12, mine.size())) << "worker " << wi;
        for (size_t j = 1; j < rows.size(); ++j) ASSERT_LT(rows[j - 1].first, rows[j].first);
        scans.fetch_add(1);
        continue;
      }
      const std::string k = own_key(wi, static_cast<unsigned>(rng() % kOwn));
      const std::string v = "w" + std::to_string(wi) + "." + std::to_string(i);
      auto it = mine.find(k);
      const bool had = it != mine.end();
      switch (r % 4) {
        case 0:
          ASSERT_EQ(h.insert(KeyView(k), v), !had);
          if (!had) mine[k] = v;
          break;
        case 1:
          ASSERT_EQ(h.update(KeyView(k), v), had);
          if (had) mine[k] = v;
          break;
        case 2:
          ASSERT_EQ(h.remove(KeyView(k)), had);
          mine.erase(k);
          break;
        default:
          ASSERT_EQ(h.search(KeyView(k), out), had);
          if (had) {
            ASSERT_EQ(out, it->second);
          }
      }
      if (rng() % 3 == 0) c.pause();
    }
  });
  EXPECT_GT(scans.load(), 0u);
  // The final contents: every owned key as its owner left it, each hot key present iff its
  // successful inserts outnumber its successful removes (by exactly one).
  std::map<std::string, std::string> all;
  for (auto& m : model) all.insert(m.begin(), m.end());
  auto h = cl.index->handle(cl.setup);
  std::string out;
  for (unsigned hk = 0; hk < kHot; ++hk) {
    int64_t net = 0;
    for (auto& a : hot_net) net += a[hk];
    ASSERT_TRUE(net == 0 || net == 1) << hk;
    ASSERT_EQ(h.search(KeyView(hot_key(hk)), out), net == 1);
    if (net) all[hot_key(hk)] = out;
  }
  std::vector<std::pair<std::string, std::string>> rows;
  h.scan(KeyView("\0", 1), all.size() + 10, rows);
  ASSERT_EQ(rows.size(), all.size());
  auto it = all.begin();
  for (size_t i = 0; i < rows.size(); ++i, ++it) {
    ASSERT_EQ(rows[i].first, it->first);
    ASSERT_EQ(rows[i].second, it->second);
    ASSERT_TRUE(h.search(KeyView(it->first), out));
    ASSERT_EQ(out, it->second);
  }
}

#ifdef DMRT_FAULT_INJECTION
TEST(HStoreFaults, ReplyBeforeApplyIsReportedAsAViolation) {
  auto o = stress_options();
  hstore::ServerOptions faulty;
  faulty.faults.reply_before_apply = true;
  harness::StressOptions so;
  so.threads = 2;
  so.fibers = 4;
  so.keys = 16;
  so.ops_per_worker = scaled(1000);
  so.mix = {50, 20, 20, 10, 0};
  // The early reply opens a window of a few server pauses; a client must read the key inside
  // it. On a loaded machine a run can miss every window, so up to five runs may be needed.
  harness::StressOutcome out;
  for (int run = 0; run < 5; ++run) {
    HStoreCluster cl(o, faulty);  // a fresh index each time: the history starts empty
    so.seed = 1 + run;
    out = harness::run_stress(
        cl.pool, [&](harness::ShmClient& c) { return cl.index->handle(c); }, so);
    if (out.result.verdict == Verdict::kViolation) break;
  }
  EXPECT_EQ(out.result.verdict, Verdict::kViolation) << out.result.explain();
  std::printf("%s", out.result.explain().c_str());
}

TEST(HStoreFaults, ScanWithoutDrainIsReportedAsAViolation) {
  auto o = stress_options();
  hstore::ServerOptions faulty;
  faulty.faults.scan_skips_drain = true;
  o.apply_lag_ns = 50'000'000;  // nothing reaches the skiplist in time but by a drain
  HStoreCluster cl(o, faulty);
  harness::StressOptions so;
  so.threads = 2;
  so.fibers = 4;
  so.keys = 32;
  so.ops_per_worker = scaled(600);
  so.mix = {20, 30, 20, 5, 25};
  auto out = harness::run_stress(
      cl.pool, [&](harness::ShmClient& c) { return cl.index->handle(c); }, so);
  EXPECT_EQ(out.result.verdict, Verdict::kViolation) << out.result.explain();
  std::printf("%s", out.result.explain().c_str());
}
#endif

// --- a server's index killed during a concurrent run
// ------------------------------------------------

enum class Kill { kSls, kHts, kHtsMidBatch };

// 2 compute nodes x 8 fibers: 4 writers and 4 readers each (one reader of the first node is the
// manager). Writers own key ranges (a model of what each acknowledged) and also write a few shared
// hot keys; readers GET and SCAN. The manager kills the chosen server's index once a third of the
// writes are done, waits until readers have had GETs answered during the outage, rebuilds it, and
// the run goes on. Afterwards every acknowledged write is present (GET and SCAN), and the whole
// history is linearizable.
// kHtsMidBatch: the HTS is killed in the middle of a request batch (half of its effects applied,
// none answered) rather than between requests; the manager acts once it is stuck there.
void kill_during_run(Kill which) {
  hstore::Options o;
  o.expected_keys = 4096;
  o.status_poll_ns = 500'000;
  std::atomic<bool> stalled{false};
  hstore::ServerOptions so;
  if (which == Kill::kHtsMidBatch) so.faults.stall_mid_batch = &stalled;
  HStoreCluster cl(o, 2, 2, uint64_t{128} << 20, {}, nullptr, so);
  auto attached = testing::HIndex::attach(cl.setup, o);  // the second compute node's view
  constexpr unsigned kThreads = 2, kFibers = 8, kWritersPerThread = 4;
  constexpr unsigned kWriters = kThreads * kWritersPerThread;
  const size_t per_writer = scaled(1200);
  constexpr Key kRange = 1'000'000, kOwnKeys = 150, kHot = 24;
  std::vector<std::map<Key, std::string>> model(kWriters);
  std::vector<HistoryRecorder> recs;
  for (unsigned i = 0; i < kThreads * kFibers; ++i) recs.emplace_back(i, 4000, ValueMode::kFull);
  std::atomic<size_t> writes_done{0}, writers_left{kWriters};
  std::atomic<int> phase{0};  // 0 before the kill, 1 index lost, 2 rebuilt
  std::atomic<size_t> gets_in_outage{0}, scans_in_outage{0};
  double outage_ms = 0;
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& w) {
    testing::ShmClient c(shm::Endpoint(cl.pool, cl.compute(w.thread), w.index));
    auto h = (w.thread == 0 ? cl.index : attached)->handle(c);
    auto& rec = recs[w.index];
    std::mt19937_64 rng(17 + w.index);
    std::string out;
    std::vector<std::pair<Key, std::string>> rows;
    if (w.fiber < kWritersPerThread) {  // writer
      unsigned wi = w.thread * kWritersPerThread + w.fiber;
      auto& mine = model[wi];
      // per_writer writes, and on until the rebuild is done: some are always in flight across it.
      for (size_t i = 0; i < per_writer || phase.load() != 2; ++i) {
        bool hot = rng() % 8 == 0;
        Key k = hot ? rng() % kHot : (wi + 1) * kRange + rng() % kOwnKeys;
        std::string v = harness::make_value(w.index, i, 8 + rng() % 40);
        unsigned op = rng() % 10;
        uint64_t t0 = c.now_ns();
        if (op < 4) {
          bool ok = h.insert(k, v);
          rec.insert(k, v, ok, t0, c.now_ns());
          if (!hot && ok) mine[k] = v;
        } else if (op < 8) {
          bool ok = h.update(k, v);
          rec.update(k, v, ok, t0, c.now_ns());
          if (!hot && ok) mine[k] = v;
        } else {
          bool ok = h.remove(k);
          rec.remove(k, ok, t0, c.now_ns());
          if (!hot && ok) mine.erase(k);
        }
        writes_done.fetch_add(1);
        if (rng() % 3 == 0) c.pause();
      }
      writers_left.fetch_sub(1);
      return;
    }
    if (w.fiber == kFibers - 1 && w.thread == 0) {  // the manager
      testing::ShmClient mc(shm::Endpoint(cl.pool, cl.compute(0), 300));
      if (which == Kill::kHtsMidBatch) {
        uint64_t give_up = mc.now_ns() + 60'000'000'000ull;
        while (!stalled.load() && mc.now_ns() < give_up) c.pause();
        if (!stalled.load()) throw std::runtime_error("the HTS never reached the kill point");
      } else {
        while (writes_done.load() < kWriters * per_writer / 3) c.pause();
      }
      uint64_t t0 = mc.now_ns();
      if (which == Kill::kSls)
        cl.servers->fail_sls(mc);
      else
        cl.servers->fail_hts(mc);
      phase.store(1);
      // Let the survivors serve a while: GETs must keep being answered.
      uint64_t until = mc.now_ns() + 100'000'000, give_up = until + 20'000'000'000ull;
      while (mc.now_ns() < until || (gets_in_outage.load() < 50 && mc.now_ns() < give_up))
        c.pause();
      if (which == Kill::kSls)
        cl.servers->rebuild_sls();
      else
        cl.servers->rebuild_hts();
      if (!cl.servers->wait_serving(mc, 60'000'000'000ull))
        throw std::runtime_error("rebuild never finished");
      outage_ms = double(mc.now_ns() - t0) / 1e6;
      phase.store(2);
      return;
    }
    // reader
    while (writers_left.load() > 0 || phase.load() != 2) {
      unsigned wi = static_cast<unsigned>(rng() % kWriters);
      Key k = rng() % 4 == 0 ? rng() % kHot : (wi + 1) * kRange + rng() % kOwnKeys;
      int ph = phase.load();
      uint64_t t0 = c.now_ns();
      // The first reader of each thread only GETs (a SCAN waits out an SLS outage).
      if (w.fiber != kWritersPerThread && rng() % 10 == 0 && (which != Kill::kSls || ph != 1)) {
        // SCAN (waits while the SLS is down; the HTS-down run scans throughout).
        h.scan(k, 20, rows);
        rec.scan(k, 20, rows, t0, c.now_ns());
        if (ph == 1 && phase.load() == 1) scans_in_outage.fetch_add(1);
      } else {
        bool f = h.search(k, out);
        rec.search(k, f, out, t0, c.now_ns());
        if (ph == 1 && phase.load() == 1) gets_in_outage.fetch_add(1);
      }
      c.pause();
    }
  });
  EXPECT_EQ(phase.load(), 2);
  EXPECT_GE(gets_in_outage.load(), 50u);
  // Every acknowledged write is there: GET each model key, SCAN each writer's range.
  auto h = cl.index->handle(cl.setup);
  std::string out;
  std::vector<std::pair<Key, std::string>> rows;
  size_t keys = 0;
  for (unsigned wi = 0; wi < kWriters; ++wi) {
    Key lo = (wi + 1) * kRange;
    for (Key k = lo; k < lo + kOwnKeys; ++k) {
      auto it = model[wi].find(k);
      bool f = h.search(k, out);
      ASSERT_EQ(f, it != model[wi].end()) << "key " << k;
      if (f) {
        ASSERT_EQ(out, it->second) << "key " << k;
      }
    }
    h.scan(lo, kOwnKeys + 1, rows);
    while (!rows.empty() && rows.back().first >= lo + kOwnKeys) rows.pop_back();
    ASSERT_EQ(rows.size(), model[wi].size());
    size_t i = 0;
    for (auto& [k, v] : model[wi]) {
      ASSERT_EQ(rows[i].first, k);
      ASSERT_EQ(rows[i].second, v);
      ++i;
    }
    keys += model[wi].size();
  }
  History hist;
  for (auto& r : recs) hist.append(std::move(r));
  CheckOptions co;
  co.deadline_seconds = 60;
  auto res = check_history(hist, co);
  auto s = cl.index->stats(cl.setup);
  std::printf(
      "%s killed: outage %.1f ms, %zu GETs and %zu SCANs answered during it; %zu ops, %s; rebuild "
      "%.2f ms "
      "(%.0f keys); dedup hits %.0f, write retries %.0f+%.0f, degraded GETs %.0f+%.0f, stale ships "
      "%.0f\n",
      which == Kill::kSls   ? "SLS"
      : which == Kill::kHts ? "HTS"
                            : "HTS mid-batch",
      outage_ms, gets_in_outage.load(), scans_in_outage.load(), hist.size(), to_string(res.verdict),
      which == Kill::kSls ? s["sls_rebuild_ms"] : s["hts_rebuild_ms"],
      which == Kill::kSls ? s["sls_rebuild_keys"] : s["hts_rebuild_keys"], s["dedup_hits"],
      s["write_retries"], attached->stats()["write_retries"], s["degraded_gets"],
      attached->stats()["degraded_gets"], s["sls_stale_ships"]);
  EXPECT_TRUE(res.linearizable) << res.explain();
  EXPECT_GT(keys, 0u);
}

TEST(HStoreRecovery, SkiplistServerKilledDuringConcurrentRun) {
  kill_during_run(Kill::kSls);
}
TEST(HStoreRecovery, HashTableServerKilledDuringConcurrentRun) {
  kill_during_run(Kill::kHts);
}

#ifdef DMRT_FAULT_INJECTION  // the kill point is a test-only switch
TEST(HStoreRecovery, HashTableServerKilledMidBatch) {
  kill_during_run(Kill::kHtsMidBatch);
}
#endif

}  // namespace
}  // namespace dmrt
