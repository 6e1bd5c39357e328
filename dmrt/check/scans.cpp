// Scan checks: presence and value tables per key answer each scan's questions in O(log n).
#include "dmrt/check/scans.h"

#include "dmrt/check/search_poll.h"

#include <algorithm>
#include <optional>
#include <string>

namespace dmrt::check_detail {

namespace {

bool implies_present(const Operation& o) {
  switch (o.kind) {
    case OpKind::kInsert:
      return true;  // inserted, or found present
    case OpKind::kUpdate:
    case OpKind::kSearch:
    case OpKind::kRmw:
      return o.ok;
    default:
      return false;
  }
}
bool writes_value(const Operation& o) {  // may have installed o.arg
  bool w = o.kind == OpKind::kInsert || o.kind == OpKind::kUpdate || o.kind == OpKind::kRmw;
  return w && (o.ok || o.pending());
}
bool mutated(const Operation& o) {  // certainly changed the key (completed and succeeded)
  return !o.pending() && o.ok &&
         (o.kind == OpKind::kInsert || o.kind == OpKind::kUpdate || o.kind == OpKind::kRmw ||
          o.kind == OpKind::kRemove);
}

// Per-key tables answering the scan questions in O(log n).
struct ScanIndex {
  // presence proofs sorted by response, with running max of invocation
  std::vector<uint64_t> proof_resp, proof_inv_max;
  // removes that may have succeeded, sorted by invocation, with running max of response
  std::vector<uint64_t> rm_inv, rm_resp_max;
  // writes of a value: (value hash, invoke, response)
  struct W {
    uint64_t value, inv, resp;
  };
  std::vector<W> writes;
  // certain mutations sorted by invocation, with suffix min of response
  std::vector<uint64_t> mut_inv, mut_resp_min;

  explicit ScanIndex(std::span<const Operation> ops) {
    std::vector<std::pair<uint64_t, uint64_t>> pr, rm, mu;
    for (const Operation& o : ops) {
      if (o.kind == OpKind::kScan) continue;
      if (!o.pending() && implies_present(o)) pr.push_back({o.response_ns, o.invoke_ns});
      if (o.kind == OpKind::kRemove && (o.ok || o.pending()))
        rm.push_back({o.invoke_ns, o.response_ns});
      if (writes_value(o)) writes.push_back({o.arg, o.invoke_ns, o.response_ns});
      if (mutated(o)) mu.push_back({o.invoke_ns, o.response_ns});
    }
    std::sort(pr.begin(), pr.end());
    uint64_t m = 0;
    for (auto [r, i] : pr) {
      proof_resp.push_back(r);
      proof_inv_max.push_back(m = std::max(m, i));
    }
    std::sort(rm.begin(), rm.end());
    m = 0;
    for (auto [i, r] : rm) {
      rm_inv.push_back(i);
      rm_resp_max.push_back(m = std::max(m, r));
    }
    std::sort(writes.begin(), writes.end(),
              [](const W& a, const W& b) { return a.value < b.value; });
    std::sort(mu.begin(), mu.end());
    mut_inv.resize(mu.size());
    mut_resp_min.resize(mu.size());
    uint64_t mn = kNoResponse;
    for (size_t k = mu.size(); k-- > 0;) {
      mut_inv[k] = mu[k].first;
      mut_resp_min[k] = mn = std::min(mn, mu[k].second);
    }
  }

  // Certainly present during all of [a, b]?
  bool present_throughout(uint64_t a, uint64_t b) const {
    size_t n = std::lower_bound(proof_resp.begin(), proof_resp.end(), a) - proof_resp.begin();
    if (n == 0) return false;  // no op proving presence completed before a
    uint64_t from = proof_inv_max[n - 1];
    size_t r = std::lower_bound(rm_inv.begin(), rm_inv.end(), b) - rm_inv.begin();
    return r == 0 || rm_resp_max[r - 1] <= from;  // no remove could fall in (from, b)
  }
  // Could the key have held `value` at some moment of [a, b]?
  bool could_hold(uint64_t value, uint64_t a, uint64_t b) const {
    auto lo = std::lower_bound(writes.begin(), writes.end(), value,
                               [](const W& w, uint64_t v) { return w.value < v; });
    for (auto it = lo; it != writes.end() && it->value == value; ++it) {
      if (it->inv >= b) continue;  // began after the scan ended
      if (it->resp == kNoResponse) return true;
      size_t k = std::upper_bound(mut_inv.begin(), mut_inv.end(), it->resp) - mut_inv.begin();
      if (k == mut_inv.size() || mut_resp_min[k] >= a) return true;  // not surely overwritten
    }
    return false;
  }
};

}  // namespace

void check_scans(const History& history, std::span<const Operation> ops,
                 std::span<const KeyRange> keys, std::vector<Operation> scans,
                 Clock::time_point deadline, size_t max_rendered_ops, CheckResult& res) {
  // The tables take O(n log n) to build and a scan's missing-key test walks every key in its
  // range: both read the clock on their work, not once per scan.
  Poll poll(deadline, nullptr);
  auto out_of_time = [&] {
    res.unknown = true;
    res.unknown_reason = "the deadline passed while checking scans";
  };
  std::vector<Key> key_list;
  std::vector<ScanIndex> idx;
  key_list.reserve(keys.size());
  idx.reserve(keys.size());
  for (const KeyRange& kr : keys) {
    // (A key's table is built at once: a key of a million operations takes ~0.1 s.)
    if (poll.tick(4 * (kr.end - kr.begin) + 1)) return out_of_time();
    key_list.push_back(kr.key);
    idx.emplace_back(std::span<const Operation>(ops.data() + kr.begin, kr.end - kr.begin));
  }
  auto find = [&](Key k) -> const ScanIndex* {
    auto it = std::lower_bound(key_list.begin(), key_list.end(), k);
    return it != key_list.end() && *it == k ? &idx[it - key_list.begin()] : nullptr;
  };
  if (!sort_polled(
          std::span<Operation>(scans),
          [](const Operation& a, const Operation& b) { return a.invoke_ns < b.invoke_ns; }, poll))
    return out_of_time();
  for (const Operation& sc : scans) {
    if (sc.pending()) continue;  // returned nothing: promises nothing
    auto rows = history.rows_of(sc);
    if (poll.tick(1 + rows.size())) return out_of_time();
    ++res.scans_checked;
    std::string problem;
    std::optional<Key> about;
    if (rows.size() > sc.arg) problem = "returned more rows than asked for";
    for (size_t i = 0; problem.empty() && i < rows.size(); ++i) {
      if (rows[i].key < sc.key) {
        problem = "row key " + std::to_string(rows[i].key) + " is below from";
      } else if (i > 0 && rows[i].key <= rows[i - 1].key) {
        problem = "rows not strictly ascending at key " + std::to_string(rows[i].key);
      } else {
        const ScanIndex* si = find(rows[i].key);
        if (!si || !si->could_hold(rows[i].value, sc.invoke_ns, sc.response_ns)) {
          about = rows[i].key;
          problem = "key " + std::to_string(rows[i].key) + " returned with value " +
                    history.render_value(rows[i].value) +
                    ", which it cannot have held at any moment of the scan";
        }
      }
    }
    if (problem.empty() && sc.arg > 0) {
      Key upper = rows.size() == sc.arg ? rows.back().key : ~Key{0};
      size_t r = 0;
      for (auto it = std::lower_bound(key_list.begin(), key_list.end(), sc.key);
           it != key_list.end() && *it <= upper; ++it) {
        if (poll.tick(4)) return out_of_time();
        while (r < rows.size() && rows[r].key < *it) ++r;
        if (r < rows.size() && rows[r].key == *it) continue;
        if (idx[it - key_list.begin()].present_throughout(sc.invoke_ns, sc.response_ns)) {
          about = *it;
          problem = "key " + std::to_string(*it) +
                    " was present throughout the scan and within its range, but is missing";
          break;
        }
      }
    }
    if (!problem.empty()) {
      res.failing_scan = sc;
      res.scan_problem = problem;
      std::vector<Operation> w{sc};
      if (about) {
        std::vector<Operation> near;
        for (const KeyRange& kr : keys)
          if (kr.key == *about)
            for (size_t i = kr.begin; i < kr.end; ++i)
              if (ops[i].invoke_ns <= sc.response_ns) near.push_back(ops[i]);
        if (near.size() > 20) near.erase(near.begin(), near.end() - 20);
        w.insert(w.end(), near.begin(), near.end());
      }
      std::sort(w.begin(), w.end(),
                [](const Operation& a, const Operation& b) { return a.invoke_ns < b.invoke_ns; });
      res.smallest_failing_history = w;
      res.details = history.render_ops(w, max_rendered_ops);
      break;
    }
  }
}

}  // namespace dmrt::check_detail
