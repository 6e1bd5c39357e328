// SMART with byte-string keys (issue 19) under threads x fibers on two compute nodes (shm): long
// user keys and prefixes of them raced by inserts, updates, deletes and searches, the history
// checked for linearizability, also with every multi-word READ torn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "../runtime/test_cluster.h"
#include "../sherman/kv_checks.h"
#include "dmrt/check/history.h"
#include "dmrt/check/linearizability.h"
#include "dmrt/indexes/smart/smart.h"
#include "dmrt/runtime/key_bytes.h"

namespace dmrt {
namespace {

using KCTree = smart::Tree<ShmTransport>;

using KCtx = testing::NodeClient<KCTree>;
using KTwoNodes = testing::PerNodeTrees<KCTree>;

// Threads x fibers on two compute nodes insert, update, search and remove long user keys (and
// prefixes of them), all recorded; with DMRT_FAULT_INJECTION, every multi-word READ torn. The
// history names a key by its rank in the key list.
void bytes_racing_history(uint32_t key_size, uint32_t seed, bool torn) {
  const unsigned threads = 2, fibers = 4;
  const size_t ops = 1500, key_space_max = 600;
  smart::Options o;
  o.key_size = key_size;
  o.value_size = 16;
  KTwoNodes ns(2, o);
#ifdef DMRT_FAULT_INJECTION
  ns.pool->set_torn_reads(torn);
#else
  (void)torn;
#endif
  std::vector<std::string> keys;
  for (size_t i = 0; i < key_space_max; ++i) {
    std::string d = std::to_string(i / 3);
    std::string u = "user" + std::string(key_size - 4 - d.size(), '0') + d;
    if (i % 3 == 1) u[4] = '1';
    if (i % 3 == 2) u.resize(key_size - 1 - i % 5);  // a prefix of other keys
    keys.push_back(u);
  }
  // A prefix may repeat: the history names each distinct key once.
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const size_t key_space = keys.size();
  std::vector<HistoryRecorder> recs;
  for (unsigned i = 0; i < threads * fibers; ++i) recs.emplace_back(i, ops);
  Scheduler sched({threads, fibers});
  sched.run([&](const WorkerId& w) {
    unsigned n = w.thread;
    KCtx ctx(ns.pool, ns.cns[n], w.index, ns.trees[n]);
    std::mt19937_64 rng(seed * 100 + w.index);
    std::string out;
    for (uint32_t i = 0; i < ops; ++i) {
      Key r = rng() % key_space;
      KeyView k(keys[r]);
      std::string v = testing::value_for(r, w.index, i) + "-16b-val";
      uint64_t t0 = ctx.client.now_ns();
      unsigned op = rng() % 10;
      if (op < 4) {
        bool ok = ctx.handle.insert(k, v);
        recs[w.index].insert(r, v, ok, t0, ctx.client.now_ns());
      } else if (op < 6) {
        bool ok = ctx.handle.update(k, v);
        recs[w.index].update(r, v, ok, t0, ctx.client.now_ns());
      } else if (op < 7) {
        bool ok = ctx.handle.remove(k);
        recs[w.index].remove(r, ok, t0, ctx.client.now_ns());
      } else {
        bool ok = ctx.handle.search(k, out);
        recs[w.index].search(r, ok, out, t0, ctx.client.now_ns());
      }
    }
  });
  History hist;
  for (auto& r : recs) hist.append(r);
  CheckOptions co;
  co.check_scans = false;
  co.deadline_seconds = 60;
  CheckResult res = check_history(hist, co);
  EXPECT_EQ(res.verdict, Verdict::kLinearizable) << res.explain();
  auto s0 = ns.trees[0]->stats(), s1 = ns.trees[1]->stats();
  EXPECT_GT(s0["leaf_splits"] + s1["leaf_splits"], 10);
  if (torn) {
    EXPECT_GT(s0["leaf_retries"] + s1["leaf_retries"], 0);  // torn leaves were caught
  }
  std::printf(
      "smart byte keys (%u B%s): leaf splits %.0f, prefix splits %.0f, cas failures %.0f, "
      "torn leaf reads caught %.0f\n",
      key_size, torn ? ", torn reads" : "", s0["leaf_splits"] + s1["leaf_splits"],
      s0["prefix_splits"] + s1["prefix_splits"], s0["cas_failures"] + s1["cas_failures"],
      s0["leaf_retries"] + s1["leaf_retries"]);
}

TEST(SmartKeysConcurrency, RacingByteKeysAreLinearizable) {
  bytes_racing_history(32, 1, false);
  bytes_racing_history(256, 2, false);
}

#ifdef DMRT_FAULT_INJECTION
TEST(SmartKeysConcurrency, RacingByteKeysAreLinearizableWithTornReads) {
  bytes_racing_history(32, 3, true);
  bytes_racing_history(256, 4, true);
}
#endif

}  // namespace
}  // namespace dmrt
