// The checker's per-key search (memoization, greedy read-only steps, merged unread values,
// earliest-deadline order) against a brute-force enumeration of every linearization, on many
// small random histories of one key, and on hot-key histories with long blind writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "dmrt/check/linearizability.h"

namespace dmrt {
namespace {

// The model of dmrt/check/linearizability.h, written out plainly: can `o` take effect in `s` (with
// its recorded result), and what state does it leave? A pending operation may take effect with
// its state-changing outcome (or not at all).
bool apply(const Operation& o, KeyState& s) {
  if (o.pending()) {
    switch (o.kind) {
      case OpKind::kInsert:
        if (s.present) return false;
        s = {true, o.arg};
        return true;
      case OpKind::kUpdate:
      case OpKind::kRmw:
        if (!s.present) return false;
        s = {true, o.arg};
        return true;
      case OpKind::kRemove:
        if (!s.present) return false;
        s = {false, 0};
        return true;
      default:
        return false;
    }
  }
  switch (o.kind) {
    case OpKind::kSearch:
      return o.ok ? s.present && s.value == o.out : !s.present;
    case OpKind::kInsert:
      if (!o.ok) return s.present;
      if (s.present) return false;
      s = {true, o.arg};
      return true;
    case OpKind::kUpdate:
      if (!o.ok) return !s.present;
      if (!s.present) return false;
      s = {true, o.arg};
      return true;
    case OpKind::kRemove:
      if (!o.ok) return !s.present;
      if (!s.present) return false;
      s = {false, 0};
      return true;
    case OpKind::kRmw:
      if (!o.ok) return !s.present;
      if (!s.present || s.value != o.out) return false;
      s = {true, o.arg};
      return true;
    case OpKind::kScan:
      return false;
  }
  return false;
}

// Every order of the operations that respects real time (a before b when a returned strictly
// before b was invoked), pending ones optional; true when one follows the model from `s`.
bool brute(const std::vector<Operation>& ops, std::vector<bool>& used, KeyState s) {
  bool all_completed = true;
  for (size_t i = 0; i < ops.size(); ++i)
    if (!used[i] && !ops[i].pending()) all_completed = false;
  if (all_completed) return true;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (used[i]) continue;
    bool ready = true;  // every op that returned before i was invoked is already placed
    for (size_t j = 0; j < ops.size() && ready; ++j)
      if (!used[j] && j != i && !ops[j].pending() && ops[j].response_ns < ops[i].invoke_ns)
        ready = false;
    if (!ready) continue;
    KeyState ns = s;
    if (!apply(ops[i], ns)) continue;
    used[i] = true;
    bool ok = brute(ops, used, ns);
    used[i] = false;
    if (ok) return true;
  }
  return false;
}

// A random history of one key: a sequential run of random operations over a few values (so
// values repeat and some are never read), each given an interval around its effect point;
// some results are then flipped or replaced, so that about half the histories are violations.
std::vector<Operation> random_history(std::mt19937_64& rng, size_t n) {
  auto pick = [&](uint64_t k) { return rng() % k; };
  std::vector<Operation> ops;
  KeyState s;
  for (size_t i = 0; i < n; ++i) {
    Operation o;
    o.key = 1;
    o.client = static_cast<uint32_t>(i);
    o.kind = static_cast<OpKind>(std::vector<int>{0, 0, 1, 2, 2, 3, 5}[pick(7)]);
    o.arg = 1 + pick(4);
    KeyState before = s;
    switch (o.kind) {
      case OpKind::kSearch:
        o.ok = s.present;
        o.out = s.present ? s.value : 0;
        break;
      case OpKind::kRmw:
        o.ok = s.present;
        o.out = s.present ? s.value : 0;
        if (s.present) s.value = o.arg;
        break;
      default:
        o.ok = apply(o, s);
        if (!o.ok) s = before;
    }
    uint64_t point = 100 + 10 * i;
    o.invoke_ns = point - pick(25);
    o.response_ns = point + pick(25);
    if (pick(12) == 0) o.response_ns = kNoResponse;
    if (pick(4) == 0) {  // corrupt the result
      if (pick(2) == 0 || o.kind == OpKind::kInsert || o.kind == OpKind::kRemove)
        o.ok = !o.ok;
      else
        o.out = 1 + pick(4);
    }
    if (o.kind == OpKind::kSearch && o.ok && o.out == 0) o.out = 1;
    ops.push_back(o);
  }
  return ops;
}

std::string render(const std::vector<Operation>& ops) {
  History h;
  h.ops = ops;
  std::string s;
  for (const Operation& o : ops) s += "  " + h.render(o) + "\n";
  return s;
}

TEST(CheckerCrossCheck, AgreesWithBruteForceOnRandomSmallHistories) {
  std::mt19937_64 rng(20261125);
  int linearizable = 0, violations = 0, any_state_only = 0;
  for (int round = 0; round < 20000; ++round) {
    auto ops = random_history(rng, 3 + rng() % 7);
    std::vector<bool> used(ops.size());
    bool expect_empty = brute(ops, used, {});
    Verdict got = check_key(ops, {}, 1'000'000);
    ASSERT_NE(got, Verdict::kUnknown);
    ASSERT_EQ(got == Verdict::kLinearizable, expect_empty) << "round " << round << "\n"
                                                           << render(ops);
    (expect_empty ? linearizable : violations)++;

    bool expect_any = expect_empty;  // any initial state: absent, or present with any value
    for (uint64_t v = 0; v <= 5 && !expect_any; ++v) expect_any = brute(ops, used, {true, v});
    Verdict any = check_key_any_state(ops, 1'000'000);
    ASSERT_EQ(any == Verdict::kLinearizable, expect_any) << "round " << round << "\n"
                                                         << render(ops);
    if (expect_any && !expect_empty) ++any_state_only;
  }
  // The generator must exercise both answers, or the comparison proves little.
  EXPECT_GT(linearizable, 5000);
  EXPECT_GT(violations, 5000);
  EXPECT_GT(any_state_only, 200);
}

// Hot-key shape of an interleaved run: 32 clients, half reads, half blind updates with unique
// values, one update in ten lasting a hundred times longer (CAS retries). Its effect point is
// random inside its interval, so the history is linearizable by construction. Without merged
// unread values and the earliest-deadline order the search ran out of a 200M-step budget on
// such histories; now it is linear.
TEST(CheckerCrossCheck, HotKeyWithLongBlindWritesIsDecidedQuickly) {
  std::mt19937_64 rng(7);
  std::vector<Operation> ops;
  uint64_t value = 1;
  struct Eff {
    uint64_t at;
    size_t op;
  };
  std::vector<Eff> effects;
  Operation ins;
  ins.key = 1;
  ins.kind = OpKind::kInsert;
  ins.arg = value++;
  ins.ok = true;
  ins.invoke_ns = 0;
  ins.response_ns = 5;
  ops.push_back(ins);
  effects.push_back({2, 0});
  for (size_t i = 0; i < 20000; ++i) {
    Operation o;
    o.key = 1;
    o.client = static_cast<uint32_t>(i % 32);
    uint64_t at = 5000 + 10 * i;
    bool lng = rng() % 10 == 0;
    uint64_t before = lng ? rng() % 3000 : rng() % 30, after = lng ? rng() % 3000 : rng() % 30;
    o.invoke_ns = at - before;
    o.response_ns = at + after + 1;
    o.kind = rng() % 2 ? OpKind::kSearch : OpKind::kUpdate;
    if (o.kind == OpKind::kUpdate) o.arg = value++;
    o.ok = true;
    effects.push_back({at, ops.size()});
    ops.push_back(o);
  }
  // Fill the reads from the sequential order of effect points.
  std::sort(effects.begin(), effects.end(), [](const Eff& a, const Eff& b) { return a.at < b.at; });
  uint64_t current = 0;
  for (const Eff& e : effects) {
    Operation& o = ops[e.op];
    if (o.kind == OpKind::kSearch)
      o.out = current;
    else
      current = o.arg;
  }
  uint64_t steps = 0;
  EXPECT_EQ(check_key(ops, {}, 5'000'000, &steps), Verdict::kLinearizable);
  EXPECT_LT(steps, 1'000'000u);

  // The same history with one read answered by a value overwritten long before: a violation,
  // still decided (not "unknown"), though every configuration before that read must be refuted.
  for (size_t i = ops.size() / 10; i < ops.size(); ++i) {
    if (ops[i].kind == OpKind::kSearch && ops[i].response_ns - ops[i].invoke_ns < 100) {
      ops[i].out = ops[10].kind == OpKind::kUpdate ? ops[10].arg : ops[11].arg;
      break;
    }
  }
  uint64_t vsteps = 0;
  EXPECT_EQ(check_key(ops, {}, 50'000'000, &vsteps), Verdict::kViolation);
  EXPECT_LT(vsteps, 5'000'000u);
}

}  // namespace
}  // namespace dmrt
