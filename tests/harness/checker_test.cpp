// The linearizability checker on hand-built histories: linearizable ones (sequential, needing
// reordering, with pending operations), clear violations with small witnesses, scans, budgets.
#include <gtest/gtest.h>

#include <initializer_list>

#include "dmrt/check/linearizability.h"

namespace dmrt {
namespace {

// Recorders for clients 0..n-1 keeping full values (readable reports).
struct Builder {
  std::vector<HistoryRecorder> c;
  explicit Builder(unsigned clients = 4) {
    for (unsigned i = 0; i < clients; ++i) c.emplace_back(i, 16, ValueMode::kFull);
  }
  HistoryRecorder& operator[](unsigned i) { return c[i]; }
  History build() { return merge_histories(c); }
};

CheckResult check(Builder& b, CheckOptions o = {}) {
  History h = b.build();
  return check_history(h, o);
}

#define EXPECT_LIN(expr)                          \
  do {                                            \
    const CheckResult& r_ = (expr);               \
    EXPECT_TRUE(r_.linearizable) << r_.explain(); \
  } while (0)
#define EXPECT_VIOLATION(expr)                                  \
  do {                                                          \
    const CheckResult& r_ = (expr);                             \
    EXPECT_EQ(r_.verdict, Verdict::kViolation) << r_.explain(); \
    EXPECT_FALSE(r_.linearizable);                              \
    EXPECT_FALSE(r_.unknown);                                   \
  } while (0)

TEST(Checker, EmptyHistoryIsLinearizable) {
  Builder b;
  auto r = check(b);
  EXPECT_LIN(r);
  EXPECT_EQ(r.operations_checked, 0u);
}

TEST(Checker, SequentialHistoryFollowsTheModel) {
  Builder b(1);
  uint64_t t = 0;
  auto& c = b[0];
  c.search(7, false, "", t, t + 1), t += 2;
  c.update(7, "a", false, t, t + 1), t += 2;
  c.remove(7, false, t, t + 1), t += 2;
  c.insert(7, "a", true, t, t + 1), t += 2;
  c.insert(7, "z", false, t, t + 1), t += 2;
  c.search(7, true, "a", t, t + 1), t += 2;
  c.update(7, "b", true, t, t + 1), t += 2;
  c.rmw(7, "c", true, "b", t, t + 1), t += 2;
  c.search(7, true, "c", t, t + 1), t += 2;
  c.remove(7, true, t, t + 1), t += 2;
  c.rmw(7, "d", false, "", t, t + 1), t += 2;
  c.search(7, false, "", t, t + 1), t += 2;
  auto r = check(b);
  EXPECT_LIN(r);
  EXPECT_EQ(r.operations_checked, 12u);
  EXPECT_EQ(r.keys_checked, 1u);
}

TEST(Checker, OverlappingOperationsMayBeReordered) {
  Builder b;
  // The remove is invoked first but must take effect after the insert it overlaps.
  b[0].remove(1, true, 0, 100);
  b[1].insert(1, "a", true, 10, 20);
  b[2].search(1, false, "", 110, 120);
  // A read that returns before the write responds, but sees it.
  b[0].update(2, "x", false, 0, 5);
  b[1].insert(2, "a", true, 200, 300);
  b[2].search(2, true, "a", 210, 220);
  b[3].search(2, false, "", 205, 215);
  // Concurrent updates: readers agree on one order.
  b[0].insert(3, "a", true, 0, 10);
  b[1].update(3, "b", true, 20, 100);
  b[2].update(3, "c", true, 20, 100);
  b[3].search(3, true, "c", 30, 40);
  b[3].search(3, true, "b", 50, 60);
  b[0].search(3, true, "b", 110, 120);
  auto r = check(b);
  EXPECT_LIN(r);
  EXPECT_EQ(r.keys_checked, 3u);
}

TEST(Checker, StaleReadAfterCompletedUpdateIsCaught) {
  Builder b;
  b[0].insert(5, "a", true, 0, 10);
  b[1].update(5, "b", true, 20, 30);
  b[2].search(5, true, "a", 40, 50);  // stale
  auto r = check(b);
  EXPECT_VIOLATION(r);
  ASSERT_TRUE(r.failing_key);
  EXPECT_EQ(*r.failing_key, 5u);
  EXPECT_LE(r.smallest_failing_history.size(), 3u);
  EXPECT_NE(r.explain().find("\"a\""), std::string::npos) << r.explain();
}

TEST(Checker, LostInsertIsCaught) {
  Builder b;
  b[0].insert(9, "a", true, 0, 10);
  b[1].search(9, false, "", 20, 30);
  auto r = check(b);
  EXPECT_VIOLATION(r);
  EXPECT_EQ(r.smallest_failing_history.size(), 2u) << r.explain();
  EXPECT_TRUE(r.witness_from_any_state);
}

TEST(Checker, TwoSuccessfulInsertsWithoutRemoveAreCaught) {
  Builder b;
  b[0].insert(4, "a", true, 0, 100);
  b[1].insert(4, "b", true, 10, 90);  // concurrent, yet both cannot succeed
  auto r = check(b);
  EXPECT_VIOLATION(r);
  EXPECT_EQ(r.smallest_failing_history.size(), 2u);
}

TEST(Checker, ReadAfterSuccessfulDeleteIsCaught) {
  Builder b;
  b[0].insert(3, "a", true, 0, 10);
  b[1].remove(3, true, 20, 30);
  b[2].search(3, true, "a", 40, 50);
  auto r = check(b);
  EXPECT_VIOLATION(r);
  EXPECT_LE(r.smallest_failing_history.size(), 2u) << r.explain();
}

TEST(Checker, ReadsFlipFloppingBetweenTwoValuesAreCaught) {
  Builder b;
  b[0].insert(1, "a", true, 0, 10);
  b[1].update(1, "b", true, 20, 200);
  b[2].search(1, true, "b", 30, 40);
  b[3].search(1, true, "a", 50, 60);  // after b was seen, a is gone for good
  auto r = check(b);
  EXPECT_VIOLATION(r);
  EXPECT_LE(r.smallest_failing_history.size(), 4u) << r.explain();
}

TEST(Checker, LostUpdateByConcurrentRmwIsCaught) {
  Builder b;
  b[0].insert(2, "a", true, 0, 10);
  b[1].rmw(2, "b", true, "a", 20, 100);
  b[2].rmw(2, "c", true, "a", 30, 90);  // both read a: one update was lost
  auto r = check(b);
  EXPECT_VIOLATION(r);
}

TEST(Checker, PendingOperationsMayOrMayNotTakeEffect) {
  Builder b;
  // Pending insert seen by a later read.
  b[0].begin(OpKind::kInsert, 1, "a", 0);
  b[1].search(1, false, "", 10, 20);
  b[1].search(1, true, "a", 30, 40);
  // Pending update never seen.
  b[2].insert(2, "x", true, 0, 5);
  b[2].begin(OpKind::kUpdate, 2, "y", 10);
  b[3].search(2, true, "x", 50, 60);
  // Pending remove seen, then an insert.
  b[0].insert(3, "q", true, 0, 0);
  b[1].begin(OpKind::kRemove, 3, "", 1);
  b[3].search(3, false, "", 70, 80);
  b[3].insert(3, "r", true, 90, 95);
  // Pending search: nothing to check.
  b[3].begin(OpKind::kSearch, 3, "", 100);
  auto r = check(b);
  EXPECT_LIN(r);
}

TEST(Checker, PendingOperationCannotExplainAnUnwrittenValue) {
  Builder b;
  b[0].begin(OpKind::kInsert, 1, "a", 0);
  b[1].search(1, true, "b", 10, 20);
  auto r = check(b);
  EXPECT_VIOLATION(r);
  // ... nor a value read before it was invoked.
  Builder c;
  c[1].search(1, true, "a", 0, 5);
  c[0].begin(OpKind::kInsert, 1, "a", 10);
  EXPECT_VIOLATION(check(c));
}

TEST(Checker, CompletedBeforeInvokedIsRespected) {
  Builder b;
  b[0].search(1, true, "a", 0, 5);  // returns before the insert is invoked
  b[1].insert(1, "a", true, 6, 10);
  EXPECT_VIOLATION(check(b));
  Builder c;  // touching intervals count as concurrent
  c[0].search(1, true, "a", 0, 6);
  c[1].insert(1, "a", true, 6, 10);
  EXPECT_LIN(check(c));
}

TEST(Checker, ViolationInOneKeyAmongManyIsLocated) {
  Builder b;
  uint64_t t = 0;
  for (Key k = 0; k < 200; ++k) {
    b[k % 4].insert(k, "v" + std::to_string(k), true, t, t + 3);
    b[(k + 1) % 4].search(k, true, "v" + std::to_string(k), t + 1, t + 5);
    t += 4;
  }
  b[0].update(117, "new", true, t, t + 1);
  b[1].search(117, true, "v117", t + 2, t + 3);
  auto r = check(b);
  EXPECT_VIOLATION(r);
  ASSERT_TRUE(r.failing_key);
  EXPECT_EQ(*r.failing_key, 117u);
}

TEST(Checker, LongHistoryShrinksToAFewOperations) {
  Builder b;
  uint64_t t = 0;
  b[0].insert(1, "v0", true, t, t + 5);
  t += 10;
  for (int i = 1; i < 300; ++i) {
    // two overlapping readers around each update
    b[1].update(1, "v" + std::to_string(i), true, t, t + 10);
    b[2].search(1, true, "v" + std::to_string(i - 1), t + 1, t + 3);
    b[3].search(1, true, "v" + std::to_string(i), t + 8, t + 12);
    t += 20;
    if (i == 150) {  // a stale read in the middle
      b[2].search(1, true, "v" + std::to_string(i - 2), t, t + 2);
      t += 5;
    }
  }
  auto r = check(b);
  EXPECT_VIOLATION(r);
  EXPECT_LE(r.smallest_failing_history.size(), 3u) << r.explain();
  EXPECT_TRUE(r.witness_from_any_state);
}

TEST(Checker, WitnessFromEmptyIndexWhenNoSmallerOneExists) {
  Builder b;
  b[0].search(8, true, "ghost", 0, 10);  // nothing was ever written
  auto r = check(b);
  EXPECT_VIOLATION(r);
  EXPECT_FALSE(r.witness_from_any_state);
  EXPECT_EQ(r.smallest_failing_history.size(), 1u);
}

TEST(Checker, ExhaustedBudgetIsUnknownNotViolation) {
  Builder b(32);
  // 32 overlapping updates then an impossible read: deciding takes a search, not one step.
  b[0].insert(1, "a", true, 0, 1);
  for (unsigned i = 1; i < 32; ++i) b[i].update(1, "u" + std::to_string(i), true, 10, 1000);
  b[0].search(1, true, "nowhere", 2000, 2001);
  CheckOptions o;
  o.max_steps_per_key = 20;
  auto r = check(b, o);
  EXPECT_EQ(r.verdict, Verdict::kUnknown) << r.explain();
  EXPECT_TRUE(r.unknown);
  EXPECT_FALSE(r.linearizable);
  ASSERT_EQ(r.unknown_keys.size(), 1u);
  EXPECT_EQ(r.unknown_keys[0], 1u);
}

TEST(Checker, ManyConcurrentReadersAreCheap) {
  // 32 clients reading concurrently around each of many updates: greedy read-only
  // linearization keeps this linear.
  Builder b(32);
  uint64_t t = 0;
  b[0].insert(1, "v0", true, 0, 1);
  t = 10;
  for (int i = 1; i < 200; ++i) {
    b[0].update(1, "v" + std::to_string(i), true, t, t + 50);
    for (unsigned c = 1; c < 32; ++c)
      b[c].search(1, true, "v" + std::to_string(c % 2 ? i - 1 : i), t + c, t + 60 + c);
    t += 100;
  }
  auto r = check(b);
  EXPECT_LIN(r);
  EXPECT_LT(r.search_steps, 2'000'000u) << r.explain();
}

TEST(Checker, HashOnlyHistoriesAreChecked) {
  HistoryRecorder a(0), c(1);
  a.insert(1, std::string(1000, 'x'), true, 0, 10);
  c.search(1, true, std::string(1000, 'x'), 20, 30);
  c.search(1, true, std::string(999, 'x') + "y", 40, 50);
  History h;
  h.append(std::move(a));
  h.append(std::move(c));
  auto r = check_history(h);
  EXPECT_VIOLATION(r);
  EXPECT_NE(r.explain().find("#"), std::string::npos);  // values shown as hashes
}

// --- scans ------------------------------------------------------------------------------------

using Rows = std::vector<std::pair<Key, std::string>>;

TEST(CheckerScan, ConsistentScansPass) {
  Builder b;
  b[0].insert(1, "a", true, 0, 10);
  b[0].insert(2, "b", true, 20, 30);
  b[0].insert(5, "e", true, 40, 50);
  b[1].update(2, "B", true, 60, 200);  // concurrent with the scan: either value is fine
  b[2].insert(3, "c", true, 70, 210);  // concurrent insert: may be missed
  b[3].remove(5, true, 80, 220);       // concurrent remove: may be missed or seen
  b[1].scan(1, 10, Rows{{1, "a"}, {2, "B"}, {5, "e"}}, 100, 150);
  b[2].scan(2, 2, Rows{{2, "b"}, {3, "c"}}, 100, 150);
  b[3].scan(0, 10, Rows{{1, "a"}, {2, "b"}}, 100, 150);
  auto r = check(b);
  EXPECT_LIN(r);
  EXPECT_EQ(r.scans_checked, 3u);
}

TEST(CheckerScan, MissingKeyPresentThroughoutIsCaught) {
  Builder b;
  b[0].insert(1, "a", true, 0, 10);
  b[0].insert(2, "b", true, 20, 30);
  b[0].insert(3, "c", true, 40, 50);
  b[1].scan(1, 10, Rows{{1, "a"}, {3, "c"}}, 100, 150);
  auto r = check(b);
  EXPECT_VIOLATION(r);
  ASSERT_TRUE(r.failing_scan);
  EXPECT_NE(r.scan_problem.find("key 2"), std::string::npos) << r.explain();
}

TEST(CheckerScan, KeyBeyondTheLastRowMayBeOmittedWhenCountIsReached) {
  Builder b;
  b[0].insert(1, "a", true, 0, 10);
  b[0].insert(2, "b", true, 20, 30);
  b[1].scan(1, 1, Rows{{1, "a"}}, 100, 150);
  EXPECT_LIN(check(b));
}

TEST(CheckerScan, StaleValueIsCaught) {
  Builder b;
  b[0].insert(1, "a", true, 0, 10);
  b[0].update(1, "b", true, 20, 30);
  b[1].scan(0, 10, Rows{{1, "a"}}, 100, 150);
  auto r = check(b);
  EXPECT_VIOLATION(r);
  ASSERT_TRUE(r.failing_scan);
  EXPECT_LE(r.smallest_failing_history.size(), 4u);
}

TEST(CheckerScan, ValueWrittenAfterTheScanIsCaught) {
  Builder b;
  b[1].scan(0, 10, Rows{{1, "a"}}, 100, 150);
  b[0].insert(1, "a", true, 160, 170);
  EXPECT_VIOLATION(check(b));
}

TEST(CheckerScan, UnorderedOrOutOfRangeRowsAreCaught) {
  Builder b;
  b[0].insert(1, "a", true, 0, 10);
  b[0].insert(2, "b", true, 20, 30);
  b[1].scan(0, 10, Rows{{2, "b"}, {1, "a"}}, 100, 150);
  auto r = check(b);
  EXPECT_VIOLATION(r);
  EXPECT_NE(r.scan_problem.find("ascending"), std::string::npos);
  Builder c;
  c[0].insert(1, "a", true, 0, 10);
  c[1].scan(2, 10, Rows{{1, "a"}}, 100, 150);
  EXPECT_VIOLATION(check(c));
  Builder d;
  d[0].insert(1, "a", true, 0, 10);
  d[0].insert(2, "b", true, 0, 10);
  d[1].scan(0, 1, Rows{{1, "a"}, {2, "b"}}, 100, 150);
  EXPECT_VIOLATION(check(d));
}

}  // namespace
}  // namespace dmrt
