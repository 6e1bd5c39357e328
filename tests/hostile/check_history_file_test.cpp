// Hostile history files for the checker's reader (dmrt/check/history_io.h) and dmrt-check: a file
// cut at a line boundary or inside a line is reported as truncated (never checked as a shorter
// history), and input of unbounded size (/dev/zero, a huge file) is refused at the cap, fast.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "dmrt/check/history_io.h"
#include "dmrt/check/linearizability.h"

namespace dmrt {
namespace {

std::string saved_text() {
  HistoryRecorder a(0), b(1);
  a.insert(5, "x", true, 10, 20);
  a.search(5, true, "x", 30, 40);
  b.update(5, "y", true, 50, 60);
  b.search(5, true, "y", 70, 80);
  History h;
  h.append(std::move(a));
  h.append(std::move(b));
  std::stringstream ss;
  save_history(h, ss);
  return ss.str();
}

// What load_history says about `text`: "" when it loads, else the error (and whether it was
// reported as truncated).
std::string load_error(const std::string& text, bool* truncated = nullptr) {
  std::stringstream ss(text);
  if (truncated) *truncated = false;
  try {
    load_history(ss);
    return "";
  } catch (const HistoryTruncated& e) {
    if (truncated) *truncated = true;
    return e.what();
  } catch (const HistoryFormatError& e) {
    return e.what();
  }
}

TEST(CheckHistoryFile, WholeFileLoadsAndEndsWithItsEndLine) {
  std::string text = saved_text();
  EXPECT_EQ(load_error(text), "");
  EXPECT_NE(text.find("\n# end 4 operations\n"), std::string::npos) << text;
}

TEST(CheckHistoryFile, CutAtEveryLineBoundaryIsTruncatedNotAViolation) {
  std::string text = saved_text();
  // Every proper prefix that ends with a newline (after the header line): all records parse, so
  // only the missing end line tells the cut.
  for (size_t at = text.find('\n') + 1; at < text.size(); at = text.find('\n', at) + 1) {
    bool truncated = false;
    std::string err = load_error(text.substr(0, at), &truncated);
    EXPECT_TRUE(truncated) << "cut at byte " << at << ": " << (err.empty() ? "loaded" : err);
    EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  }
}

TEST(CheckHistoryFile, CutInsideALineIsTruncated) {
  std::string text = saved_text();
  // Cut inside a number the record would still parse: only the missing newline tells the cut.
  for (size_t at = text.find('\n') + 2; at < text.size(); ++at) {
    if (text[at - 1] == '\n') continue;  // line boundaries: the test above
    bool truncated = false;
    std::string err = load_error(text.substr(0, at), &truncated);
    EXPECT_TRUE(truncated) << "cut at byte " << at << ": " << (err.empty() ? "loaded" : err);
  }
}

TEST(CheckHistoryFile, EndLineMustMatchTheRecords) {
  std::string text = saved_text();
  size_t end_line = text.rfind("# end");
  std::string fewer = text.substr(0, end_line) + "# end 5 operations\n";
  EXPECT_NE(load_error(fewer).find("announces 5 operations, 4 precede it"), std::string::npos);
  std::string after = text + "search 0 1 0 0 0 1 2\n";
  EXPECT_NE(load_error(after).find("content after the end line"), std::string::npos);
}

TEST(CheckHistoryFile, LongLineIsRefusedAtTheLineCap) {
  std::string text = "# dmrt history 2\n" + std::string(100'000, 'x');
  HistoryLimits lim;
  lim.max_line_bytes = 4096;
  std::stringstream ss(text);
  try {
    load_history(ss, lim);
    FAIL() << "accepted";
  } catch (const HistoryFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2 is longer than"), std::string::npos) << e.what();
  }
}

TEST(CheckHistoryFile, LargeInputIsRefusedAtTheSizeCap) {
  std::string text = saved_text();
  std::string big = "# dmrt history 2\n";
  while (big.size() < (3u << 20)) big += "search 0 1 0 0 0 1 2\n";
  HistoryLimits lim;
  lim.max_bytes = 1 << 20;
  std::stringstream ss(big);
  try {
    load_history(ss, lim);
    FAIL() << "accepted";
  } catch (const HistoryFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than 1 MiB, the cap"), std::string::npos)
        << e.what();
  }
  // A regular file over the cap is refused by its size, before it is read.
  std::string path = ::testing::TempDir() + "/check_history_big.txt";
  {
    std::ofstream f(path);
    f << big;
  }
  try {
    load_history(path, lim);
    FAIL() << "accepted";
  } catch (const HistoryFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("is more than 1 MiB, the cap"), std::string::npos)
        << e.what();
  }
  std::remove(path.c_str());
}

// Runs a shell command; returns its exit status and (in out) what it printed on both streams.
int run(const std::string& cmd, std::string& out) {
  out.clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

const char* check_bin() {
  const char* b = std::getenv("DMRT_CHECK_BIN");
  return b ? b : "";
}

TEST(CheckHistoryFile, DmrtCheckRefusesDevZeroNamingTheCap) {
  ASSERT_NE(std::string(check_bin()), "") << "DMRT_CHECK_BIN is not set (meson sets it)";
  std::string out;
  int rc = run(std::string(check_bin()) + " /dev/zero", out);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("/dev/zero: line 1 is longer than 16 MiB, the cap"), std::string::npos) << out;
  // And with a smaller whole-file cap than the line cap, that cap is the one named.
  rc = run(std::string(check_bin()) + " --max-history-mb 1 /dev/zero", out);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("larger than 1 MiB, the cap on a history file"), std::string::npos) << out;
}

TEST(CheckHistoryFile, DmrtCheckReportsATruncatedFileAsTruncated) {
  ASSERT_NE(std::string(check_bin()), "") << "DMRT_CHECK_BIN is not set (meson sets it)";
  std::string text = saved_text();
  std::string path = ::testing::TempDir() + "/check_history_cut.txt";
  {
    std::ofstream f(path);
    f << text.substr(0, text.rfind("# end"));
  }
  std::string out;
  int rc = run(std::string(check_bin()) + " " + path, out);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("truncated"), std::string::npos) << out;
  EXPECT_EQ(out.find("NOT linearizable"), std::string::npos) << out;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dmrt
