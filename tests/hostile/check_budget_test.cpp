// The checker's budgets: a check stops at its deadline or its memory budget with verdict unknown
// and says which budget ran out, instead of running for hours or taking the machine's memory
// (dmrt/check/linearizability.h CheckOptions).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <random>
#include <string>

#include "dmrt/check/linearizability.h"

namespace dmrt {
namespace {

// An adversarial single-key history: n clients each insert, remove and search one hot key, all
// overlapping, with random outcomes, then a read of a value nobody wrote. Deciding it means
// refuting every interleaving: the memoized configurations grow exponentially with n (n = 16
// takes about 600 MB and half a minute unbounded; n = 24 does not finish).
History storm(unsigned n) {
  std::mt19937_64 rng(1);
  History h;
  for (unsigned i = 1; i <= n; ++i) {
    HistoryRecorder c(i);
    c.insert(1, "v" + std::to_string(i), rng() % 2, 10 + rng() % 50, 1000 + rng() % 50);
    c.remove(1, rng() % 2, 10 + rng() % 50, 1000 + rng() % 50);
    c.search(1, true, "v" + std::to_string(1 + rng() % n), 10 + rng() % 50, 1000 + rng() % 50);
    h.append(std::move(c));
  }
  HistoryRecorder late(n + 1);
  late.search(1, true, "nobody wrote this", 5000, 5001);
  h.append(std::move(late));
  return h;
}

long peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

TEST(CheckBudget, AdversarialHistoryStopsAtTheMemoryBudget) {
  CheckOptions o;
  o.memory_budget_bytes = uint64_t{64} << 20;
  o.shrink = false;
  CheckResult r = check_history(storm(24), o);
  EXPECT_EQ(r.verdict, Verdict::kUnknown) << r.explain();
  EXPECT_NE(r.unknown_reason.find("the memory budget of 64 MiB ran out"), std::string::npos)
      << r.unknown_reason;
  EXPECT_NE(r.explain().find("undecided: the memory budget"), std::string::npos) << r.explain();
  ASSERT_EQ(r.unknown_keys.size(), 1u);
  EXPECT_EQ(r.unknown_keys[0], 1u);
  // The whole process stayed near the budget (the test binary itself takes a few MiB).
  EXPECT_LT(peak_rss_mib(), 64 + 128);
}

TEST(CheckBudget, DeadlineStopsAnAdversarialSearch) {
  CheckOptions o;
  o.deadline_seconds = 0.5;
  o.memory_budget_bytes = uint64_t{1} << 30;
  o.shrink = false;
  CheckResult r = check_history(storm(40), o);
  EXPECT_EQ(r.verdict, Verdict::kUnknown) << r.explain();
  EXPECT_NE(r.unknown_reason.find("the deadline of 0.5 s passed"), std::string::npos)
      << r.unknown_reason;
}

TEST(CheckBudget, SmallAdversarialHistoryIsStillDecided) {
  CheckOptions o;
  o.memory_budget_bytes = uint64_t{256} << 20;
  o.shrink = false;
  CheckResult r = check_history(storm(10), o);
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.explain();
  EXPECT_TRUE(r.unknown_reason.empty()) << r.unknown_reason;
}

TEST(CheckBudget, DeadlineStopsTheCheckWithUnknownAndSaysSo) {
  History h;
  for (unsigned k = 0; k < 200; ++k) {
    HistoryRecorder c(k);
    c.insert(k + 1, "x", true, 10, 20);
    c.search(k + 1, true, "x", 30, 40);
    h.append(std::move(c));
  }
  CheckOptions o;
  o.deadline_seconds = 1e-9;  // over before the first key
  CheckResult r = check_history(h, o);
  EXPECT_EQ(r.verdict, Verdict::kUnknown) << r.explain();
  EXPECT_NE(r.unknown_reason.find("deadline of 1e-09 s passed"), std::string::npos)
      << r.unknown_reason;
  EXPECT_FALSE(r.unknown_keys.empty());
}

TEST(CheckBudget, StepBudgetIsNamedToo) {
  CheckOptions o;
  o.max_steps_per_key = 5;
  o.shrink = false;
  CheckResult r = check_history(storm(12), o);
  EXPECT_EQ(r.verdict, Verdict::kUnknown) << r.explain();
  EXPECT_NE(r.unknown_reason.find("more than 5 search steps"), std::string::npos)
      << r.unknown_reason;
}

}  // namespace
}  // namespace dmrt
