// Shared index checks for range-index tests: std::map differential run and a concurrent stress
// whose end state is checked against the union of acknowledged writes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt::testing {

// Values name their key (high 32 bits = low 32 bits of the key), so any value read can be
// checked for belonging to its key without shared bookkeeping.
inline std::string value_for(Key k, uint32_t writer, uint32_t seq) {
  uint64_t v = (k & 0xffffffffull) << 32 | uint64_t{writer & 0xff} << 24 | (seq & 0xffffff);
  return std::string(reinterpret_cast<const char*>(&v), 8);
}
inline bool value_belongs(Key k, const std::string& v) {
  if (v.size() != 8) return false;
  uint64_t x;
  std::memcpy(&x, v.data(), 8);
  return (x >> 32) == (k & 0xffffffffull);
}

class Zipf {
 public:
  Zipf(size_t n, double theta) : cdf_(n) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += 1.0 / std::pow(double(i + 1), theta);
    double acc = 0;
    for (size_t i = 0; i < n; ++i) {
      acc += 1.0 / std::pow(double(i + 1), theta) / sum;
      cdf_[i] = acc;
    }
  }
  template <class R>
  size_t operator()(R& rng) const {
    double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return std::min<size_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin(),
                            cdf_.size() - 1);
  }

 private:
  std::vector<double> cdf_;
};

// Spread ranks over the key space so tree order and hotness are unrelated.
inline Key key_of_rank(size_t r) {
  return (uint64_t(r) + 1) * 0x9E3779B97F4Aull % (uint64_t{1} << 50);
}

// Single client, random ops (including scans) against std::map, over the keys `key_of` gives
// the ranks [0, key_space) (default: spread over the key space).
template <class H, class F = Key (*)(size_t)>
void differential_run(H& h, size_t ops, size_t key_space, uint32_t seed, F key_of = key_of_rank) {
  std::mt19937_64 rng(seed);
  std::map<Key, std::string> model;
  std::string out;
  std::vector<std::pair<Key, std::string>> rows;
  for (size_t i = 0; i < ops; ++i) {
    Key k = key_of(rng() % key_space);
    std::string v = value_for(k, 1, static_cast<uint32_t>(i));
    unsigned op = rng() % 100;
    if (op < 40) {
      bool exp = model.emplace(k, v).second;
      ASSERT_EQ(h.insert(k, v), exp) << "insert " << k << " at op " << i;
    } else if (op < 55) {
      auto it = model.find(k);
      bool exp = it != model.end();
      if (exp) it->second = v;
      ASSERT_EQ(h.update(k, v), exp) << "update " << k << " at op " << i;
    } else if (op < 70) {
      bool exp = model.erase(k) > 0;
      ASSERT_EQ(h.remove(k), exp) << "remove " << k << " at op " << i;
    } else if (op < 92) {
      auto it = model.find(k);
      bool got = h.search(k, out);
      ASSERT_EQ(got, it != model.end()) << "search " << k << " at op " << i;
      if (got) {
        ASSERT_EQ(out, it->second) << "search value " << k;
      }
    } else {
      size_t n = rng() % 40 + 1;
      Key from = (rng() % 2) ? k : k + 1;
      h.scan(from, n, rows);
      auto it = model.lower_bound(from);
      size_t j = 0;
      for (; it != model.end() && j < n; ++it, ++j) {
        ASSERT_LT(j, rows.size()) << "scan from " << from << " too short at op " << i;
        ASSERT_EQ(rows[j].first, it->first) << "scan row " << j << " at op " << i;
        ASSERT_EQ(rows[j].second, it->second);
      }
      ASSERT_EQ(rows.size(), j) << "scan from " << from << " too long at op " << i;
    }
  }
  // Full final comparison through one long scan.
  h.scan(0, model.size() + 10, rows);
  ASSERT_EQ(rows.size(), model.size());
  size_t j = 0;
  for (auto& [k, v] : model) {
    ASSERT_EQ(rows[j].first, k);
    ASSERT_EQ(rows[j].second, v);
    ++j;
  }
}

// What one worker saw acknowledged.
struct WorkerLog {
  std::map<Key, std::set<std::string>> written;  // acked insert/update values
  std::set<Key> removed;                         // acked removes
  size_t scans = 0, scan_rows = 0;
};

struct StressConfig {
  unsigned threads = 2, fibers = 4;
  size_t ops_per_worker = 5000;
  size_t key_space = 3000;
  double theta = 0.99;
  unsigned remove_pct = 10, scan_pct = 5;
};

// Runs make(worker) -> handle-owning functor on threads x fibers; returns per-worker logs.
// `body(worker, op_fn)` style keeps the index-specific client/handle creation in the caller.
template <class MakeHandle>
std::vector<WorkerLog> stress_run(const StressConfig& cfg, MakeHandle make) {
  std::vector<WorkerLog> logs(cfg.threads * cfg.fibers);
  Zipf zipf(cfg.key_space, cfg.theta);
  Scheduler sched({cfg.threads, cfg.fibers});
  sched.run([&](const WorkerId& w) {
    auto ctx = make(w);  // owns client + handle
    auto& h = ctx->handle;
    WorkerLog& log = logs[w.index];
    std::mt19937_64 rng(1234 + w.index);
    std::string out;
    std::vector<std::pair<Key, std::string>> rows;
    for (size_t i = 0; i < cfg.ops_per_worker; ++i) {
      Key k = key_of_rank(zipf(rng));
      unsigned op = rng() % 100;
      std::string v = value_for(k, w.index, static_cast<uint32_t>(i));
      if (op < 30) {
        if (h.insert(k, v)) log.written[k].insert(v);
      } else if (op < 50) {
        if (h.update(k, v)) log.written[k].insert(v);
      } else if (op < 50 + cfg.remove_pct) {
        if (h.remove(k)) log.removed.insert(k);
      } else if (op < 50 + cfg.remove_pct + cfg.scan_pct) {
        h.scan(k, 20, rows);
        ++log.scans;
        log.scan_rows += rows.size();
        for (size_t j = 0; j < rows.size(); ++j) {
          const char* why = rows[j].first < k                         ? "below the scan's start"
                            : j && rows[j].first <= rows[j - 1].first ? "not after the row before"
                            : !value_belongs(rows[j].first, rows[j].second)
                                ? "a value never written for it"
                                : nullptr;
          if (why)
            throw std::runtime_error(
                "bad scan row " + std::to_string(j) + " of " + std::to_string(rows.size()) +
                " from " + std::to_string(k) + ": key " + std::to_string(rows[j].first) + ", " +
                why +
                (j ? " (row before: key " + std::to_string(rows[j - 1].first) + ")"
                   : std::string()));
        }
        if (rows.size() > 20) throw std::runtime_error("scan returned too many rows");
      } else {
        if (h.search(k, out) && !value_belongs(k, out))
          throw std::runtime_error("search returned a value not written for key " +
                                   std::to_string(k));
      }
    }
  });
  return logs;
}

// End state vs the union of acknowledged writes: every acked write of a never-removed key is
// present with some acked value; no key is present that no insert acknowledged. Returns the
// first violation, or "" when the state is explained by the acknowledged writes.
template <class H>
std::string final_state_error(H& h, const std::vector<WorkerLog>& logs, size_t key_space) {
  std::map<Key, std::set<std::string>> written;
  std::set<Key> removed;
  for (auto& l : logs) {
    for (auto& [k, vs] : l.written) written[k].insert(vs.begin(), vs.end());
    removed.insert(l.removed.begin(), l.removed.end());
  }
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(0, key_space + 100, rows);
  std::set<Key> present;
  for (auto& [k, v] : rows) {
    present.insert(k);
    auto it = written.find(k);
    if (it == written.end()) return "phantom key " + std::to_string(k);
    if (!it->second.count(v))
      return "key " + std::to_string(k) + " holds a value no acked write wrote";
  }
  std::string out;
  size_t must = 0;
  for (auto& [k, vs] : written) {
    bool got = h.search(k, out);
    if (got != (present.count(k) > 0))
      return "search and scan disagree on key " + std::to_string(k);
    if (!removed.count(k)) {
      ++must;
      if (!got) return "acknowledged key " + std::to_string(k) + " is missing";
      if (!vs.count(out)) return "key " + std::to_string(k) + " holds a value no acked write wrote";
    }
  }
  if (must == 0) return "no key to check";
  return "";
}

}  // namespace dmrt::testing
