// Histories across hosts (docs/correctness.md): the clock bound of a saved part, moving
// timestamps onto the reference clock, and widening each part by its own bound before the union,
// so that a skew inside the bound never shows as a violation and one beyond it is still caught.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dmrt/check/history_io.h"
#include "dmrt/check/linearizability.h"

namespace dmrt {
namespace {

std::string saved(const History& h) {
  std::stringstream ss;
  save_history(h, ss);
  return ss.str();
}

History loaded(const std::string& text) {
  std::stringstream ss(text);
  return load_history(ss);
}

History one_insert(uint64_t bound) {
  HistoryRecorder r(3);
  r.insert(1, "v", true, 100, 200);
  History h;
  h.append(std::move(r));
  h.clock_bound_ns = bound;
  return h;
}

TEST(ClockBound, SavedRightAfterTheHeaderAndLoadedBack) {
  std::string text = saved(one_insert(1234));
  EXPECT_EQ(text.rfind("# dmrt history 2\n# clock bound_ns 1234\n", 0), 0u) << text;
  EXPECT_EQ(loaded(text).clock_bound_ns, 1234u);
  // No bound, no line: the file is what it was before bounds existed.
  text = saved(one_insert(0));
  EXPECT_EQ(text.find("clock"), std::string::npos) << text;
  EXPECT_EQ(loaded(text).clock_bound_ns, 0u);
  // Another comment that happens to start with "# clock" is a comment.
  History h = loaded(
      "# dmrt history 2\n# clocks differ\ninsert 3 1 0 0 1 100 200\n"
      "# end 1 operations\n");
  EXPECT_EQ(h.clock_bound_ns, 0u);
  EXPECT_EQ(h.ops.size(), 1u);
}

TEST(ClockBound, MalformedClockLineNamesTheLine) {
  const char* bad[] = {
      "# dmrt history 2\n# clock bound_ns x\n# end 0 operations\n",
      "# dmrt history 2\n# clock\n# end 0 operations\n",
      "# dmrt history 2\n# clock bound_ns 5 6\n# end 0 operations\n",
      "# dmrt history 2\n# clock bound_ms 5\n# end 0 operations\n",
      "# dmrt history 2\n# clock bound_ns -5\n# end 0 operations\n",
      "# dmrt history 2\n# clock bound_ns 99999999999999999999\n# end 0 operations\n",
  };
  for (const char* text : bad) {
    try {
      loaded(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const HistoryFormatError& e) {
      EXPECT_NE(std::string(e.what()).find("line 2: malformed clock line"), std::string::npos)
          << e.what();
    }
  }
  try {
    loaded("# dmrt history 2\n# clock bound_ns 5\n# clock bound_ns 5\n# end 0 operations\n");
    ADD_FAILURE() << "two clock lines accepted";
  } catch (const HistoryFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3: a second clock line"), std::string::npos)
        << e.what();
  }
  try {
    loaded("# dmrt history 2\ninsert 3 1 0 0 1 100 200\n# clock bound_ns 5\n# end 1 operations\n");
    ADD_FAILURE() << "a clock line after operations accepted";
  } catch (const HistoryFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3: the clock line must precede"), std::string::npos)
        << e.what();
  }
}

TEST(ClockBound, WideningMovesInvocationsEarlierAndResponsesLater) {
  HistoryRecorder r(0);
  r.insert(1, "a", true, 50, 80);
  r.insert(2, "b", true, 1000, 1010);
  r.begin(OpKind::kUpdate, 3, "c", 2000);  // pending
  r.insert(4, "d", true, 3000, kNoResponse - 10);
  History h;
  h.append(std::move(r));
  h.clock_bound_ns = 100;
  widen_by_clock_bound(h);
  EXPECT_EQ(h.clock_bound_ns, 0u);
  EXPECT_EQ(h.ops[0].invoke_ns, 0u);  // saturates at 0
  EXPECT_EQ(h.ops[0].response_ns, 180u);
  EXPECT_EQ(h.ops[1].invoke_ns, 900u);
  EXPECT_EQ(h.ops[1].response_ns, 1110u);
  EXPECT_EQ(h.ops[2].invoke_ns, 1900u);
  EXPECT_TRUE(h.ops[2].pending());                   // still pending
  EXPECT_EQ(h.ops[3].response_ns, kNoResponse - 1);  // never becomes pending
  EXPECT_FALSE(h.ops[3].pending());
}

TEST(ClockBound, ToReferenceClockShiftsAndAddsTheBound) {
  HistoryRecorder r(0);
  r.insert(1, "a", true, 5000, 6000);
  r.begin(OpKind::kRemove, 1, "", 7000);
  History h;
  h.append(std::move(r));
  to_reference_clock(h, ClockOffset{-1000, 40});
  EXPECT_EQ(h.ops[0].invoke_ns, 4000u);
  EXPECT_EQ(h.ops[0].response_ns, 5000u);
  EXPECT_EQ(h.ops[1].invoke_ns, 6000u);
  EXPECT_TRUE(h.ops[1].pending());
  EXPECT_EQ(h.clock_bound_ns, 40u);
  to_reference_clock(h, ClockOffset{10, 2});
  EXPECT_EQ(h.ops[0].invoke_ns, 4010u);
  EXPECT_EQ(h.clock_bound_ns, 42u);
}

// Host 1 (the reference clock, bound 0) inserts key 1 over [1000, 1100] of true time; host 2
// reads it, truly after, but host 2's converted clock reads `skew` ns early (within its bound of
// 250 ns).
History host1() {
  HistoryRecorder a(1);
  a.insert(1, "v", true, 1000, 1100);
  History h;
  h.append(std::move(a));
  return h;
}
History host2(uint64_t true_invoke, bool found, uint64_t skew) {
  HistoryRecorder b(2);
  b.search(1, found, "v", true_invoke - skew, true_invoke + 50 - skew);
  History h;
  h.append(std::move(b));
  h.clock_bound_ns = 250;
  return h;
}

TEST(ClockBound, UnionWidensEachPartSoASkewInsideTheBoundIsNoViolation) {
  // Truly at [1150, 1200] the search finds v: linearizable. Host 2's clock reads 220 ns early,
  // so its search appears to complete (at 980) before the insert began (at 1000).
  History naive = host1();
  {
    History part = host2(1150, true, 220);
    part.clock_bound_ns = 0;  // a union that ignores the bound
    append_history(naive, std::move(part));
  }
  EXPECT_EQ(check_history(naive).verdict, Verdict::kViolation);

  History joined = host1();
  append_history(joined, host2(1150, true, 220));
  EXPECT_EQ(joined.clock_bound_ns, 0u);
  EXPECT_EQ(joined.ops[1].invoke_ns, 1150u - 220 - 250);
  EXPECT_EQ(check_history(joined).verdict, Verdict::kLinearizable);

  // check_history honours a single history's bound by itself.
  History alone = host2(1150, true, 220);
  append_history(alone, host1());
  EXPECT_EQ(check_history(alone).verdict, Verdict::kLinearizable);
  History unjoined = host1();
  unjoined.ops.push_back(host2(1150, true, 220).ops[0]);
  unjoined.clock_bound_ns = 250;
  EXPECT_EQ(check_history(unjoined).verdict, Verdict::kLinearizable);
}

TEST(ClockBound, AViolationBeyondTheBoundIsStillCaughtAndOneInsideItIsTheCost) {
  // A search that truly starts 900 ns after the insert returned and misses the key: caught, as
  // the widened search [1730, 2080] still begins after the insert's response.
  History far = host1();
  append_history(far, host2(2000, false, 220));
  EXPECT_EQ(check_history(far).verdict, Verdict::kViolation);
  // The same miss 100 ns after the insert returned is within the two bounds: no longer provable.
  History near = host1();
  append_history(near, host2(1200, false, 220));
  EXPECT_EQ(check_history(near).verdict, Verdict::kLinearizable);
}

TEST(ClockBound, LoadHistoryUnionWidensPartsAndSaysWhich) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dmrt-clock-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string a = (dir / "a.hist").string(), b = (dir / "b.hist").string();
  save_history(host1(), a);
  History p2 = host2(1150, true, 220);
  p2.clock_bound_ns = 1'812'000;
  save_history(p2, b);
  std::vector<ClockWidening> widened;
  History h = load_history_union({a, b}, {}, &widened);
  ASSERT_EQ(h.ops.size(), 2u);
  EXPECT_EQ(h.clock_bound_ns, 0u);
  ASSERT_EQ(widened.size(), 1u);
  EXPECT_EQ(widened[0].file, b);
  EXPECT_EQ(widened[0].bound_ns, 1'812'000u);
  std::string line = clock_widening_line(widened);
  EXPECT_EQ(line.rfind("clock: 1 part widened by up to 1.812 ms (", 0), 0u) << line;
  EXPECT_NE(line.find(b + " by 1.812 ms"), std::string::npos) << line;
  EXPECT_NE(line.find("docs/correctness.md"), std::string::npos) << line;
  EXPECT_EQ(clock_widening_line({}), "");
  line = clock_widening_line({{"x", 250}, {"y", 31'500}});
  EXPECT_EQ(line.rfind("clock: 2 parts widened by up to 31.5 us (x by 250 ns, y by 31.5 us;", 0),
            0u)
      << line;
  EXPECT_EQ(check_history(h).verdict, Verdict::kLinearizable);
  // A file given twice: its clients appear in both.
  try {
    load_history_union({a, a});
    ADD_FAILURE() << "one file given twice was accepted";
  } catch (const HistoryFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("one file given twice"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(ClockBound, UnionRebasesScanRowsAndMergesValues) {
  HistoryRecorder x(0, 0, ValueMode::kFull), y(1, 0, ValueMode::kFull);
  std::vector<std::pair<Key, std::string>> rx{{1, "a"}}, ry{{2, "b"}, {3, "c"}};
  x.insert(1, "a", true, 1, 2);
  x.scan(0, 5, rx, 3, 4);
  y.insert(2, "b", true, 1, 2);
  y.insert(3, "c", true, 1, 2);
  y.scan(0, 5, ry, 30, 40);
  History hx, hy;
  hx.append(std::move(x));
  hy.append(std::move(y));
  hy.clock_bound_ns = 1;
  append_history(hx, std::move(hy));
  ASSERT_EQ(hx.ops.size(), 5u);
  ASSERT_EQ(hx.scan_rows.size(), 3u);
  const Operation& scan = hx.ops[4];
  ASSERT_EQ(scan.kind, OpKind::kScan);
  auto rows = hx.rows_of(scan);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, 2u);
  EXPECT_EQ(rows[1].key, 3u);
  EXPECT_EQ(scan.invoke_ns, 29u);
  EXPECT_EQ(hx.render_value(value_hash("c")), "\"c\"");
  EXPECT_EQ(hx.hash_collisions, 0u);
}

}  // namespace
}  // namespace dmrt
