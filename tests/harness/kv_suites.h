// Generic test suites for any index offering a KvHandle (dmrt/runtime/kv.h). Plug an index in
// with a handle factory:
//
//   differential_test(make_handle, ops, seed)
//       make_handle() -> a handle (or pointer-like to one) for ONE client. Random operations from
//       a single client, compared exactly with std::map after every call.
//
//   stress_test(pool, make_handle, StressOptions)
//       make_handle(testing::ShmClient&) -> a handle for that client. T threads x F fibers on the
//       shm transport, zipfian keys, search/insert/update/remove (+ scan for range handles);
//       every operation is recorded and the history must be linearizable.
//   run_stress(...) does the same and returns the outcome without asserting (fault proofs).
//   run_ranked_stress(...) is their loop, shared with byte_key_stress_test (bytes_suites.h).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/workload/zipfian.h"
#include "dmrt/check/history.h"
#include "dmrt/check/linearizability.h"
#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt::harness {

using ShmClient = Client<ShmTransport>;

// A handle, or a pointer / smart pointer to one.
template <class H>
decltype(auto) deref(H& h) {
  if constexpr (requires { h.remove(Key{}); })
    return (h);
  else
    return (*h);
}

// Distinct per (client, sequence) so that every written value identifies its write, padded to
// `bytes` with a pattern.
inline std::string make_value(uint32_t client, uint64_t seq, size_t bytes) {
  std::string v = "c" + std::to_string(client) + "." + std::to_string(seq) + ":";
  for (size_t i = 0; v.size() < bytes; ++i) v.push_back(static_cast<char>('a' + (seq + i) % 26));
  return v;
}

struct OpMix {
  unsigned search = 40, insert = 20, update = 20, remove = 15, scan = 5;  // weights
};

enum class Pick { kSearch, kInsert, kUpdate, kRemove, kScan };

template <class Rng>
Pick pick(const OpMix& m, bool scans, Rng& rng) {
  unsigned total = m.search + m.insert + m.update + m.remove + (scans ? m.scan : 0);
  unsigned x = std::uniform_int_distribution<unsigned>(0, total - 1)(rng);
  if (x < m.search) return Pick::kSearch;
  x -= m.search;
  if (x < m.insert) return Pick::kInsert;
  x -= m.insert;
  if (x < m.update) return Pick::kUpdate;
  x -= m.update;
  if (x < m.remove) return Pick::kRemove;
  return Pick::kScan;
}

// --- differential
// ---------------------------------------------------------------------------------

struct DifferentialOptions {
  uint64_t keys = 512;  // key space [0, keys)
  OpMix mix{};
  size_t max_scan = 24;
  size_t min_value = 1, max_value = 100;
};

template <class MakeHandle>
void differential_test(MakeHandle&& make_handle, size_t ops, uint64_t seed,
                       DifferentialOptions o = {}) {
  auto holder = make_handle();
  auto& h = deref(holder);
  using H = std::remove_reference_t<decltype(h)>;
  constexpr bool kScans = RangeHandle<H>;
  std::map<Key, std::string> model;
  std::mt19937_64 rng(seed);
  std::string out;
  std::vector<std::pair<Key, std::string>> rows;
  for (size_t i = 0; i < ops; ++i) {
    Key k = std::uniform_int_distribution<Key>(0, o.keys - 1)(rng);
    size_t len = std::uniform_int_distribution<size_t>(o.min_value, o.max_value)(rng);
    std::string v = make_value(0, i, len);
    SCOPED_TRACE("op " + std::to_string(i) + " key " + std::to_string(k) + " seed " +
                 std::to_string(seed));
    switch (pick(o.mix, kScans, rng)) {
      case Pick::kSearch: {
        auto it = model.find(k);
        out = "garbage";
        bool found = h.search(k, out);
        ASSERT_EQ(found, it != model.end());
        if (found) {
          ASSERT_EQ(out, it->second);
        }
        break;
      }
      case Pick::kInsert: {
        bool expect = !model.count(k);
        ASSERT_EQ(h.insert(k, v), expect);
        if (expect) model[k] = v;
        break;
      }
      case Pick::kUpdate: {
        auto it = model.find(k);
        ASSERT_EQ(h.update(k, v), it != model.end());
        if (it != model.end()) it->second = v;
        break;
      }
      case Pick::kRemove:
        ASSERT_EQ(h.remove(k), model.erase(k) == 1);
        break;
      case Pick::kScan:
        if constexpr (kScans) {
          size_t count = std::uniform_int_distribution<size_t>(0, o.max_scan)(rng);
          h.scan(k, count, rows);
          std::vector<std::pair<Key, std::string>> expect;
          for (auto it = model.lower_bound(k); it != model.end() && expect.size() < count; ++it)
            expect.emplace_back(it->first, it->second);
          ASSERT_EQ(rows, expect) << "scan from " << k << " count " << count;
        }
        break;
    }
  }
  // Final sweep: every key agrees.
  for (Key k = 0; k < o.keys; ++k) {
    auto it = model.find(k);
    bool found = h.search(k, out);
    ASSERT_EQ(found, it != model.end()) << "final sweep, key " << k;
    if (found) {
      ASSERT_EQ(out, it->second) << "final sweep, key " << k;
    }
  }
}

// --- concurrent stress
// -----------------------------------------------------------------------------

struct StressOptions {
  unsigned threads = 4;
  unsigned fibers = 8;  // per thread
  uint64_t keys = 256;  // key space [0, keys), zipfian over it
  double theta = 0.99;
  size_t ops_per_worker = 2000;
  OpMix mix{};  // scan weight used only for range handles
  size_t scan_count = 16;
  size_t value_bytes = 24;
  unsigned pause_every = 3;  // a worker yields to its thread's other fibers every ~N ops
  uint64_t seed = 1;
  ValueMode values = ValueMode::kFull;
  ClientOptions client{AllocatorOptions{uint64_t{64} << 10, 256}};
  CheckOptions check{};
};

struct StressOutcome {
  History history;
  CheckResult result;
  double run_seconds = 0;
  size_t operations = 0;
};

// Integer keys as run_ranked_stress draws them: the rank is the key, scan rows are ranks.
struct IntKeyRanks {
  template <class Holder>
  static decltype(auto) handle(Holder& holder) {
    return deref(holder);
  }
  template <class H>
  static constexpr bool kScans = RangeHandle<H>;
  Key key(Key r) const { return r; }
  std::vector<std::pair<Key, std::string>> rows;  // a scan's
  std::vector<std::pair<Key, std::string>>& ranked() { return rows; }
};

// The stress loop of every key kind. Ranks (copied per worker) names a handle in what
// make_handle(c) returns (handle), says whether it scans (kScans<H>), gives the key of a rank
// (key), holds a scan's rows (rows) and gives them as ranks (ranked). Each worker draws ranks
// zipfian over [0, ranks); the history records ranks, so the keys' order must be the ranks'.
template <class MakeHandle, class Ranks>
StressOutcome run_ranked_stress(const std::shared_ptr<shm::Pool>& pool, MakeHandle&& make_handle,
                                uint64_t ranks, const Ranks& ranks_proto, const StressOptions& o) {
  NodeId home = pool->config().compute_nodes().empty() ? 0 : pool->config().compute_nodes()[0];
  Scheduler sched({o.threads, o.fibers});
  std::vector<HistoryRecorder> recs(sched.workers());
  bench::Zipfian zipf_proto(ranks, o.theta);
  auto t0 = std::chrono::steady_clock::now();
  sched.run([&](const WorkerId& w) {
    ShmClient c(shm::Endpoint(pool, home, w.index), o.client);
    auto holder = make_handle(c);
    auto& h = Ranks::handle(holder);
    using H = std::remove_reference_t<decltype(h)>;
    constexpr bool kScans = Ranks::template kScans<H>;
    Ranks keys = ranks_proto;
    HistoryRecorder rec(w.index, o.ops_per_worker, o.values);
    std::mt19937_64 rng(o.seed * 0x9e3779b97f4a7c15ull + w.index);
    bench::Zipfian zipf = zipf_proto;
    std::string out;
    for (size_t i = 0; i < o.ops_per_worker && !sched.stop_requested(); ++i) {
      const Key r = zipf(rng);
      const auto& k = keys.key(r);
      Pick p = pick(o.mix, kScans, rng);
      uint64_t a = c.now_ns();
      switch (p) {
        case Pick::kSearch: {
          bool f = h.search(k, out);
          rec.search(r, f, out, a, c.now_ns());
          break;
        }
        case Pick::kInsert: {
          std::string v = make_value(w.index, i, o.value_bytes);
          a = c.now_ns();
          bool ok = h.insert(k, v);
          rec.insert(r, v, ok, a, c.now_ns());
          break;
        }
        case Pick::kUpdate: {
          std::string v = make_value(w.index, i, o.value_bytes);
          a = c.now_ns();
          bool ok = h.update(k, v);
          rec.update(r, v, ok, a, c.now_ns());
          break;
        }
        case Pick::kRemove: {
          bool ok = h.remove(k);
          rec.remove(r, ok, a, c.now_ns());
          break;
        }
        case Pick::kScan:
          if constexpr (kScans) {
            h.scan(k, o.scan_count, keys.rows);
            const uint64_t b = c.now_ns();
            rec.scan(r, o.scan_count, keys.ranked(), a, b);
          }
          break;
      }
      if (o.pause_every && rng() % o.pause_every == 0) c.pause();
    }
    recs[w.index] = std::move(rec);
  });
  StressOutcome out;
  out.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.history = merge_histories(recs);
  out.operations = out.history.size();
  out.result = check_history(out.history, o.check);
  return out;
}

template <class MakeHandle>
StressOutcome run_stress(const std::shared_ptr<shm::Pool>& pool, MakeHandle&& make_handle,
                         const StressOptions& o) {
  return run_ranked_stress(pool, std::forward<MakeHandle>(make_handle), o.keys, IntKeyRanks{}, o);
}

template <class MakeHandle>
StressOutcome stress_test(const std::shared_ptr<shm::Pool>& pool, MakeHandle&& make_handle,
                          const StressOptions& o = {}) {
  StressOutcome out = run_stress(pool, std::forward<MakeHandle>(make_handle), o);
  EXPECT_TRUE(out.result.linearizable) << out.result.explain();
  EXPECT_EQ(out.operations, size_t{o.threads} * o.fibers * o.ops_per_worker);
  std::printf("[ stress   ] %zu ops by %u workers in %.3f s; check %.3f s: %s\n", out.operations,
              o.threads * o.fibers, out.run_seconds, out.result.seconds,
              to_string(out.result.verdict));
  return out;
}

}  // namespace dmrt::harness
