// Saved histories (dmrt/check/history_io.h): a round trip keeps every field, scans' rows and
// pending operations; malformed files are refused with the line that is wrong.
#include <gtest/gtest.h>

#include <sstream>

#include "dmrt/check/history_io.h"
#include "dmrt/check/linearizability.h"

namespace dmrt {
namespace {

History sample() {
  HistoryRecorder a(0), b(7);
  a.insert(5, "x", true, 10, 20);
  a.search(5, true, "x", 30, 40);
  a.rmw(5, "y", true, "x", 50, 60);
  size_t p = a.begin(OpKind::kUpdate, 5, "z", 70);  // never completes
  (void)p;
  std::vector<std::pair<Key, std::string>> rows{{5, "y"}, {9, "w"}};
  b.insert(9, "w", true, 1, 2);
  b.scan(0, 10, rows, 80, 90);
  b.remove(3, false, 100, 110);
  size_t s = b.begin_scan(4, 2, 120);  // a scan that never returned
  (void)s;
  History h;
  h.append(std::move(a));
  h.append(std::move(b));
  return h;
}

TEST(HistoryIo, RoundTripKeepsEveryField) {
  History h = sample();
  std::stringstream ss;
  save_history(h, ss);
  History g = load_history(ss);
  ASSERT_EQ(g.ops.size(), h.ops.size());
  for (size_t i = 0; i < h.ops.size(); ++i) {
    const Operation &x = h.ops[i], &y = g.ops[i];
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.client, y.client);
    EXPECT_EQ(x.key, y.key);
    EXPECT_EQ(x.arg, y.arg);
    EXPECT_EQ(x.ok, y.ok);
    EXPECT_EQ(x.invoke_ns, y.invoke_ns);
    EXPECT_EQ(x.response_ns, y.response_ns);
    if (x.kind == OpKind::kScan) {
      ASSERT_EQ(x.rows, y.rows);
      auto rx = h.rows_of(x), ry = g.rows_of(y);
      for (size_t r = 0; r < rx.size(); ++r) {
        EXPECT_EQ(rx[r].key, ry[r].key);
        EXPECT_EQ(rx[r].value, ry[r].value);
      }
    } else {
      EXPECT_EQ(x.out, y.out);
    }
  }
  // And the checker reaches the same verdict on both.
  EXPECT_EQ(check_history(h).verdict, Verdict::kLinearizable);
  EXPECT_EQ(check_history(g).verdict, Verdict::kLinearizable);
}

void expect_refused(const std::string& text, const std::string& what) {
  std::stringstream ss(text);
  try {
    load_history(ss);
    FAIL() << "accepted: " << text;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(HistoryIo, MalformedInputIsRefusedWithTheLine) {
  const std::string head = "# dmrt history 1\n";
  expect_refused("", "not a dmrt history");
  expect_refused("search 0 1 0 0 0 1 2\n", "line 1: not a dmrt history");
  expect_refused(head + "search 0 1 0 0 0 1\n", "line 2: expected at least 8 fields");
  expect_refused(head + "find 0 1 0 0 0 1 2\n", "line 2: unknown kind");
  expect_refused(head + "# comment\nsearch 0 1 0 0 2 1 2\n", "line 3: ok must be 0 or 1");
  expect_refused(head + "search 0 1 0 0 0 5 2\n", "response before invocation");
  expect_refused(head + "search 0 1 0 zz 0 1 2\n", "bad out");
  expect_refused(head + "search 0 1 0 0 0 1 2 3:4\n", "only scans have rows");
  expect_refused(head + "scan 0 1 a 0 1 1 2 3-4\n", "bad scan row");
  expect_refused(head + "scan 0 1 a 0 1 1 - 3:4\n", "a pending scan has no rows");
}

}  // namespace
}  // namespace dmrt
