// The coherence proofs' run: an index on sim under a coherence model (sim::Coherence), several
// compute nodes of a few clients each on a few hot keys, every operation recorded and the history
// checked for linearizability. Under `none`, with all of an index's flush points in place the
// check passes; with any one removed (Options::faults.skip_flush) the run is caught: a violation,
// or an operation that never finishes (spinning on a stale line) stopped by the sim's watchdog
// and recorded as pending (docs/cxl-porting.md, "Flush points, proved").
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "dmrt/check/completeness.h"
#include "dmrt/check/history.h"
#include "dmrt/check/linearizability.h"
#include "dmrt/policies/sim/cluster.h"
#include "dmrt/policies/sim/service.h"
#include "tests/harness/kv_suites.h"
#include "tests/sim/small_cluster.h"

namespace dmrt::coherence_test {

struct Shape {
  unsigned compute_nodes = 3;
  unsigned clients_per_node = 2;
  uint64_t keys = 12;  // hot keys [0, keys)
  unsigned ops = 150;  // per client
  uint64_t seed = 1;
  size_t value_bytes = 16;
  harness::OpMix mix{35, 25, 25, 15, 0};
  // Virtual time after which a client's verbs throw (sim::Options::watchdog_ns): far more than a
  // healthy run takes (a few ms).
  uint64_t watchdog_ns = 200'000'000;
  // Freed blocks are handed out again after this many more frees (AllocatorOptions::reuse_delay):
  // soon, so that a host's cached copy of a recycled block is put to the test.
  uint32_t reuse_delay = 2;
  // Each host's cache (sim::Options::cache_bytes); 0 keeps the model's default (1 MiB). A small
  // one evicts lines within the run, so that a host can hold a node's lines from two versions.
  uint64_t cache_bytes = 0;
  // Called on a client's fiber before each of its operations (client index, operation number):
  // a manager's action inside the run, e.g. HStore's server failures and rebuilds.
  std::function<void(unsigned client, unsigned op)> before_op;
};

struct Outcome {
  CheckResult result;
  bool stuck = false;  // the watchdog stopped a client in an operation
  std::string error;   // the first error an index threw (an invariant check), if any
  // A memory-node service's failure (RunService): the watchdog stopped it spinning on a stale
  // line after the clients had finished. Set by the test from its RunService.
  std::string service_error;
  // The history's operations invoked at least half the watchdog's time before the run's end and
  // never answered (dmrt::unanswered): what the history itself says of a client the watchdog
  // stopped (its operation recorded as pending), beside the linearizability verdict.
  std::vector<Operation> unanswered;
  sim::CoherenceCounters counts;
  uint64_t ops = 0;  // operations completed
  bool incomplete() const { return !unanswered.empty(); }
  bool caught() const {
    return stuck || incomplete() || !error.empty() || !service_error.empty() ||
           result.verdict == Verdict::kViolation;
  }
  std::string describe() const {
    if (result.verdict == Verdict::kViolation) return "violation";
    if (!error.empty()) return "index error";
    if (incomplete()) return "incomplete (" + std::to_string(unanswered.size()) + " hung)";
    if (stuck) return "stuck (watchdog)";
    if (!service_error.empty()) return "service stuck (watchdog)";
    return std::string(to_string(result.verdict));
  }
  double per_op(uint64_t n) const { return ops ? static_cast<double>(n) / ops : 0.0; }
};

// A memory-node service of a run (ROLEX's retraining, HStore's servers), part of what create()
// returns so that it stops with the index, before the cluster goes. Its stop() runs the simulation
// until the service's fibers return; one that spins on a stale line is stopped by the watchdog, and
// what it threw is kept in `*failure` (Outcome::service_error).
struct RunService {
  std::unique_ptr<sim::ServiceHost> host;
  std::string* failure = nullptr;
  RunService() = default;
  RunService(const RunService&) = delete;
  RunService& operator=(const RunService&) = delete;
  ~RunService() {
    if (!host) return;
    try {
      host->stop();
    } catch (const std::exception& e) {
      if (failure && failure->empty()) *failure = e.what();
    }
  }
};

// A run that grows the structure while it runs (from an empty index: B+-tree splits up to a new
// root, RACE subtable splits and directory doublings): the shape that proves the structural
// points (root word, internal nodes, directory). Mostly inserts over many more keys than a leaf
// or bucket holds, and hosts' caches of 8 KiB: a stale line is evicted and refilled within the
// run, so that an image read without its invalidation mixes two versions (torn for good), as on a
// long run with a real cache.
inline Shape growing_shape() {
  Shape s;
  s.keys = 600;
  s.ops = 200;
  s.mix = harness::OpMix{25, 55, 10, 10, 0};
  s.cache_bytes = 8 << 10;
  return s;
}

inline sim::Options sim_options(const Shape& s, sim::Coherence coherence) {
  sim::Options o = sim::small_test_cluster(s.compute_nodes, s.clients_per_node);
  o.coherence = coherence;
  o.watchdog_ns = s.watchdog_ns;
  if (s.cache_bytes) o.cache_bytes = s.cache_bytes;
  return o;
}

// create(SimClient& setup, sim::Cluster&) -> the index (a pointer); handle(index, SimClient&) -> a
// handle (or a pointer to one) offering search/insert/update/remove on integer keys.
template <class Create, class MakeHandle>
Outcome run(const Shape& s, const sim::Options& o, Create&& create, MakeHandle&& make_handle) {
  sim::Cluster cluster(o);
  sim::SimClient setup = sim::untimed_setup_client(cluster);
  auto index = create(setup, cluster);
  cluster.reset_stats();
  const unsigned n = o.clients();
  std::vector<HistoryRecorder> recs(n);
  std::vector<char> stuck(n, 0);
  std::vector<uint64_t> done(n, 0);
  std::string error;
  sim::RunOptions run_options;
  run_options.client.allocator.reuse_delay = s.reuse_delay;
  cluster.run(
      [&](sim::SimClient& c, const sim::WorkerInfo& w) {
        HistoryRecorder rec(w.index, s.ops, ValueMode::kFull);
        // A handle may take verbs (a compute node joining within the run): its failures count as
        // the operations' do.
        std::optional<decltype(make_handle(*index, c))> holder;
        try {
          holder.emplace(make_handle(*index, c));
        } catch (const TransportError&) {
          stuck[w.index] = 1;
          return;
        } catch (const std::exception& e) {
          if (error.empty()) error = e.what();
          return;
        }
        auto& h = harness::deref(*holder);
        std::mt19937_64 rng(s.seed * 7919 + w.index);
        std::string out;
        try {
          for (unsigned i = 0; i < s.ops; ++i) {
            if (s.before_op) s.before_op(w.index, i);
            const Key k = rng() % s.keys;
            const std::string v = harness::make_value(w.index, i, s.value_bytes);
            const uint64_t at = w.now_ns();
            switch (harness::pick(s.mix, false, rng)) {
              case harness::Pick::kSearch: {
                const size_t op = rec.begin(OpKind::kSearch, k, {}, at);
                const bool f = h.search(k, out);
                rec.complete(op, f, out, w.now_ns());
                break;
              }
              case harness::Pick::kInsert: {
                const size_t op = rec.begin(OpKind::kInsert, k, v, at);
                const bool ok = h.insert(k, v);
                rec.complete(op, ok, {}, w.now_ns());
                break;
              }
              case harness::Pick::kUpdate: {
                const size_t op = rec.begin(OpKind::kUpdate, k, v, at);
                const bool ok = h.update(k, v);
                rec.complete(op, ok, {}, w.now_ns());
                break;
              }
              default: {
                const size_t op = rec.begin(OpKind::kRemove, k, {}, at);
                const bool ok = h.remove(k);
                rec.complete(op, ok, {}, w.now_ns());
              }
            }
            ++done[w.index];
          }
        } catch (const TransportError&) {
          stuck[w.index] = 1;  // the watchdog: the operation stays pending in the history
        } catch (const std::exception& e) {
          // The index found its own structure inconsistent (an invariant check threw): the
          // operation stays pending too.
          if (error.empty()) error = e.what();
        }
        recs[w.index] = std::move(rec);
      },
      run_options);
  Outcome r;
  r.counts = cluster.report().coherence_counts;
  r.error = error;
  for (unsigned i = 0; i < n; ++i) {
    r.stuck |= stuck[i] != 0;
    r.ops += done[i];
  }
  const History history = merge_histories(recs);
  r.result = check_history(history);
  r.unanswered = unanswered(history, cluster.now_ns(), s.watchdog_ns / 2);
  return r;
}

// Prints one line per run: what the proofs found, for docs/cxl-porting.md.
inline void print(const std::string& index, const std::string& what, const Outcome& r) {
  std::printf(
      "[ coherence] %-8s %-28s %-18s %5llu ops, %.2f lines invalidated, %.2f written "
      "back, %.2f stale lines per op\n",
      index.c_str(), what.c_str(), r.describe().c_str(), static_cast<unsigned long long>(r.ops),
      r.per_op(r.counts.lines_invalidated), r.per_op(r.counts.lines_written_back),
      r.per_op(r.counts.stale_lines));
  if (!r.error.empty()) std::printf("[ coherence]          the index threw: %s\n", r.error.c_str());
}

}  // namespace dmrt::coherence_test
