// The checker's driver: splits a history by key, searches the keys on a pool of threads under
// the check's deadline and memory budget, shrinks a violation, then checks the scans.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "dmrt/check/linearizability.h"
#include "dmrt/check/report.h"
#include "dmrt/check/scans.h"
#include "dmrt/check/search.h"
#include "dmrt/check/shrink.h"

namespace dmrt {

using check_detail::check_scans;
using check_detail::Clock;
using check_detail::KeyRange;
using check_detail::MemoryBudget;
using check_detail::Poll;
using check_detail::search_key;
using check_detail::SearchLimits;
using check_detail::shrink_key;
using check_detail::sort_polled;
using check_detail::StopReason;

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kLinearizable:
      return "linearizable";
    case Verdict::kViolation:
      return "NOT linearizable";
    case Verdict::kUnknown:
      return "unknown (budget exhausted)";
  }
  return "?";
}

namespace {

// The budget that left a key undecided, in words (memory first: it says the most about the
// history).
std::string deadline_reason(const CheckOptions& opt) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", opt.deadline_seconds);
  return std::string("the deadline of ") + buf + " s passed before every key was decided";
}

std::string unknown_reason(const std::vector<StopReason>& why, const CheckOptions& opt) {
  auto any = [&](StopReason r) { return std::find(why.begin(), why.end(), r) != why.end(); };
  if (any(StopReason::kMemory))
    return "the memory budget of " + mib_text(opt.memory_budget_bytes) +
           " ran out (raise it, or check the undecided keys alone with dmrt-check --key)";
  if (any(StopReason::kDeadline)) return deadline_reason(opt);
  if (any(StopReason::kSteps))
    return "a key needed more than " + std::to_string(opt.max_steps_per_key) + " search steps";
  return "the search stopped before every key was decided";
}

}  // namespace

std::string CheckResult::explain() const {
  std::string s = std::string("history ") + to_string(verdict) + ": " +
                  std::to_string(operations_checked) + " operations, " +
                  std::to_string(keys_checked) + " keys, " + std::to_string(scans_checked) +
                  " scans, " + std::to_string(search_steps) + " search steps, " +
                  std::to_string(seconds) + " s\n";
  if (failing_key)
    s += "key " + std::to_string(*failing_key) + ": these " +
         std::to_string(smallest_failing_history.size()) + " operations are not linearizable " +
         (witness_from_any_state ? "from any initial state" : "starting from an empty index") +
         " (times in ns relative to the first):\n";
  if (failing_scan) s += "scan violation: " + scan_problem + "\n";
  s += details;
  if (verdict == Verdict::kUnknown && !unknown_reason.empty())
    s += "undecided: " + unknown_reason + "\n";
  if (!unknown_keys.empty()) {
    s += "undecided keys (" + std::to_string(unknown_keys.size()) + "):";
    for (size_t i = 0; i < unknown_keys.size() && i < 20; ++i)
      s += " " + std::to_string(unknown_keys[i]);
    s += "\n";
  }
  return s;
}

CheckResult check_history(const History& history, const CheckOptions& opt) {
  auto t0 = Clock::now();
  auto deadline = opt.deadline_seconds > 0
                      ? t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(opt.deadline_seconds))
                      : Clock::time_point::max();
  CheckResult res;
  // Every phase reads the clock on a counter of its work (dmrt/check/search_poll.h), so the check
  // stops within about a millisecond of work past its deadline, whatever the history's shape.
  Poll prep(deadline, nullptr);
  auto out_of_time = [&] {
    res.verdict = Verdict::kUnknown;
    res.linearizable = false;
    res.unknown = true;
    res.unknown_reason = deadline_reason(opt);
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return res;
  };

  // Point operations grouped by key.
  std::vector<Operation> ops;
  ops.reserve(history.ops.size());
  std::vector<Operation> scans;
  // A history whose timestamps are only known within a clock bound (a part of a multi-host run)
  // is checked with every operation widened by it: no precedence the bound does not support.
  for (Operation o : history.ops) {
    if (prep.tick()) return out_of_time();
    if (history.clock_bound_ns) widen_operation(o, history.clock_bound_ns);
    (o.kind == OpKind::kScan ? scans : ops).push_back(o);
  }
  if (!sort_polled(
          std::span<Operation>(ops),
          [](const Operation& a, const Operation& b) {
            return a.key != b.key ? a.key < b.key : a.invoke_ns < b.invoke_ns;
          },
          prep))
    return out_of_time();
  std::vector<KeyRange> keys;
  for (size_t i = 0; i < ops.size();) {
    size_t j = i;
    while (j < ops.size() && ops[j].key == ops[i].key) ++j;
    keys.push_back({ops[i].key, i, j});
    if (prep.tick(j - i)) return out_of_time();
    i = j;
  }

  std::vector<Verdict> verdicts(keys.size(), Verdict::kUnknown);
  std::vector<uint8_t> done(keys.size(), 0);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> steps{0};
  std::vector<StopReason> why(keys.size(), StopReason::kNone);
  MemoryBudget memory(opt.memory_budget_bytes);
  SearchLimits limits{deadline, &stop, &memory};
  auto worker = [&] {
    for (;;) {
      size_t k = next.fetch_add(1);
      if (k >= keys.size() || stop.load()) return;
      if (Clock::now() > deadline) {
        why[k] = StopReason::kDeadline;  // the keys after it are left undecided too
        return;
      }
      std::span<const Operation> kops(ops.data() + keys[k].begin, keys[k].end - keys[k].begin);
      uint64_t st = 0;
      Verdict v = search_key(kops, {}, opt.max_steps_per_key, &st, limits, &why[k]);
      steps += st;
      verdicts[k] = v;
      done[k] = 1;
      if (v == Verdict::kViolation) stop = true;
    }
  };
  unsigned nthreads = opt.threads ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  nthreads = static_cast<unsigned>(std::min<size_t>(nthreads, std::max<size_t>(1, keys.size())));
  if (nthreads <= 1) {
    worker();
  } else {
    std::vector<std::thread> ts;
    for (unsigned i = 0; i < nthreads; ++i) ts.emplace_back(worker);
    for (auto& t : ts) t.join();
  }
  res.search_steps = steps.load();

  std::optional<size_t> bad;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (done[k] && verdicts[k] == Verdict::kViolation) {
      if (!bad) bad = k;
    } else if (verdicts[k] == Verdict::kUnknown) {
      res.unknown_keys.push_back(keys[k].key);
    } else {
      ++res.keys_checked;
      res.operations_checked += keys[k].end - keys[k].begin;
    }
  }

  if (bad) {
    const KeyRange& kr = keys[*bad];
    res.failing_key = kr.key;
    ++res.keys_checked;
    res.operations_checked += kr.end - kr.begin;
    res.unknown_keys.clear();  // a violation decides the history; the rest was cancelled
    std::vector<Operation> kops(ops.begin() + kr.begin, ops.begin() + kr.end);
    if (opt.shrink) {
      SearchLimits shrink_limits{deadline, nullptr, &memory};
      res.smallest_failing_history =
          shrink_key(std::move(kops), opt, shrink_limits, res.witness_from_any_state);
    } else {
      res.smallest_failing_history = std::move(kops);
    }
    res.details = history.render_ops(res.smallest_failing_history, opt.max_rendered_ops);
  }

  if (opt.check_scans && !scans.empty() && !bad)
    check_scans(history, ops, keys, std::move(scans), deadline, opt.max_rendered_ops, res);

  res.operations_checked += res.scans_checked;

  if (bad || res.failing_scan) {
    res.verdict = Verdict::kViolation;
  } else if (!res.unknown_keys.empty() || res.unknown) {
    res.verdict = Verdict::kUnknown;
    if (res.unknown_reason.empty()) res.unknown_reason = unknown_reason(why, opt);
  } else {
    res.verdict = Verdict::kLinearizable;
  }
  res.linearizable = res.verdict == Verdict::kLinearizable;
  res.unknown = res.verdict == Verdict::kUnknown;
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace dmrt
