// bench/workload/trace.h: YCSB trace lines in both forms, files cut into parts as the artifacts cut
// them and streamed across block boundaries, errors that name file and line, and the writer's round
// trip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/workload/trace.h"

namespace dmrt::bench::trace {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& text, const char* tag = "t")
      : path_("/tmp/dmrt-trace-" + std::to_string(::getpid()) + "-" + tag) {
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Op parse(std::string_view line, KeyKind kind = KeyKind::kInteger, size_t max_bytes = 8) {
  Op op;
  parse_line(line, kind, max_bytes, "f:1", op);
  return op;
}

std::string error_of(std::string_view line, KeyKind kind = KeyKind::kInteger) {
  try {
    parse(line, kind);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

TEST(TraceLine, BothFormsEveryOperation) {
  Op op = parse("INSERT 6284781860667377211");
  EXPECT_EQ(op.kind, OpKind::kInsert);
  EXPECT_EQ(op.key, 6284781860667377212u);  // dmrt's keys are the trace's + 1
  EXPECT_EQ(parse("READ user42").kind, OpKind::kSearch);
  EXPECT_EQ(parse("READ user42").key, 43u);
  EXPECT_EQ(parse("UPDATE\t0").key, 1u);  // monoint starts at 0
  EXPECT_EQ(parse("DELETE 7").kind, OpKind::kRemove);
  op = parse("SCAN 10 100");
  EXPECT_EQ(op.kind, OpKind::kScan);
  EXPECT_EQ(op.scan_count, 100u);
  // YCSB's basic binding, fields and all.
  op = parse("SCAN usertable user99 25 [ field0 ]");
  EXPECT_EQ(op.key, 100u);
  EXPECT_EQ(op.scan_count, 25u);
  op = parse("UPDATE usertable user5 [ field1=abc ]\r");
  EXPECT_EQ(op.kind, OpKind::kUpdate);
  EXPECT_EQ(op.key, 6u);
  // Byte-string keys: the token as it is.
  op = parse("INSERT com.example@alice", KeyKind::kBytes, 32);
  EXPECT_EQ(op.bytes, "com.example@alice");
  EXPECT_EQ(parse("SCAN user7 3", KeyKind::kBytes, 32).bytes, "user7");
}

TEST(TraceLine, MalformedLinesNameTheirPlace) {
  for (const char* line : {"FETCH 1", "READ", "READ -5", "READ 12x", "READ user", "SCAN 1",
                           "SCAN 1 0", "SCAN 1 4294967296", "SCAN 1 x", "READ 1 junk",
                           "READ 18446744073709551615", "READ 99999999999999999999", "read 1"}) {
    const std::string e = error_of(line);
    EXPECT_NE(e.find("f:1: "), std::string::npos) << line << ": " << e;
  }
  EXPECT_NE(error_of("INSERT a@b").find("needs --key-size above 8"), std::string::npos);
  try {
    parse("INSERT abcdefghijklmnop", KeyKind::kBytes, 8);
    ADD_FAILURE() << "a key longer than --key-size was accepted";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("above --key-size 8"), std::string::npos) << e.what();
  }
}

// Reads every part in order; returns the keys.
std::vector<Key> read_all(const TraceFile& f) {
  std::vector<Key> keys;
  for (unsigned p = 0; p < f.parts(); ++p) {
    auto r = f.reader(p);
    Op op;
    uint64_t n = 0;
    while (r.next(op)) {
      keys.push_back(op.key);
      ++n;
    }
    EXPECT_EQ(n, f.part_lines(p)) << "part " << p;
  }
  return keys;
}

TEST(TraceFileTest, PartsAreRunsOfConsecutiveLinesAndEveryLineRuns) {
  // Ten operations, a comment and blank lines, the last line without its newline.
  TempFile f(
      "# a YCSB trace\nINSERT 0\nINSERT 1\n\nREAD 0\nUPDATE 1\nINSERT 2\n   \nREAD 2\n"
      "SCAN 0 2\nREAD 1\nDELETE 2\nREAD 0");
  TraceFile t(f.path(), 3);
  EXPECT_EQ(t.lines(), 10u);
  EXPECT_EQ(t.inserts(), 3u);
  EXPECT_EQ(t.part_lines(0), 4u);  // floor(10 / 3) = 3 each, the remainder to the first
  EXPECT_EQ(t.part_lines(1), 3u);
  EXPECT_EQ(t.part_lines(2), 3u);
  EXPECT_EQ(read_all(t), (std::vector<Key>{1, 2, 1, 2, 3, 3, 1, 2, 3, 1}));
  auto r = t.reader(1);
  Op op;
  ASSERT_TRUE(r.next(op));
  EXPECT_EQ(op.kind, OpKind::kInsert);
  EXPECT_EQ(r.line_number(), 7u);  // physical line numbers, comments and blanks included
  // More parts than lines: the last parts are empty.
  TraceFile many(f.path(), 16);
  EXPECT_EQ(many.part_lines(9), 1u);
  EXPECT_EQ(many.part_lines(10), 0u);
  EXPECT_EQ(read_all(many).size(), 10u);
}

TEST(TraceFileTest, StreamsAcrossBlocksWithLinesStraddlingThem) {
  // ~3.4 MB: lines cross the 1 MiB read blocks at every kind of offset.
  std::string text;
  std::vector<Key> want;
  for (uint64_t i = 0; i < 200000; ++i) {
    const uint64_t k = i * 2654435761u % 1000003;
    text +=
        (i % 5 == 0 ? "SCAN " + std::to_string(k) + " 10\n" : "READ " + std::to_string(k) + "\n");
    want.push_back(k + 1);
  }
  TempFile f(text, "big");
  for (unsigned parts : {1u, 7u, 64u}) {
    TraceFile t(f.path(), parts);
    EXPECT_EQ(t.lines(), want.size());
    EXPECT_EQ(read_all(t), want) << parts << " parts";
  }
}

TEST(TraceFileTest, ErrorsNameTheFileAndLine) {
  // Every line is checked when the file is measured, before any client runs.
  TempFile f("INSERT 1\nINSERT 2\nREAD 1\nREAD two\n", "bad");
  try {
    TraceFile t(f.path(), 2);
    ADD_FAILURE() << "a malformed line was accepted";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(f.path() + ":4: "), std::string::npos) << e.what();
  }
  // Byte-string keys are checked against their limit the same way.
  TempFile b("INSERT com.example@bob\nINSERT com.example.very.long.host.name@alice\n", "bytes");
  EXPECT_EQ(TraceFile(b.path(), 1, KeyKind::kBytes, 64).lines(), 2u);
  EXPECT_THROW(TraceFile(b.path(), 1, KeyKind::kBytes, 24), TraceError);
  EXPECT_THROW(TraceFile("/nonexistent/trace", 1), TraceError);
  EXPECT_THROW(TraceFile("/dev/zero", 1), TraceError);  // not a regular file
  TempFile endless(std::string(3 << 20, 'x'), "long");  // no newline in 3 MiB
  EXPECT_THROW(TraceFile(endless.path(), 1), TraceError);
}

TEST(TraceWriter, WrittenTracesReplayToTheSameOperations) {
  const std::string path = "/tmp/dmrt-trace-" + std::to_string(::getpid()) + "-w";
  {
    Writer w(path);
    w.write(OpKind::kInsert, 1);
    w.write(OpKind::kSearch, 18446744073709551615ull);
    w.write(OpKind::kScan, 5, 100);
    w.write(OpKind::kRemove, 9);
    EXPECT_THROW(w.write(OpKind::kRmw, 3), TraceError);
    EXPECT_THROW(w.write(OpKind::kUpdate, 0), TraceError);
    EXPECT_EQ(w.written(), 4u);
    w.close();
  }
  TraceFile t(path, 1);
  auto r = t.reader(0);
  Op op;
  std::vector<std::pair<OpKind, Key>> got;
  while (r.next(op)) got.emplace_back(op.kind, op.key);
  EXPECT_EQ(got, (std::vector<std::pair<OpKind, Key>>{{OpKind::kInsert, 1},
                                                      {OpKind::kSearch, 18446744073709551615ull},
                                                      {OpKind::kScan, 5},
                                                      {OpKind::kRemove, 9}}));
  std::remove(path.c_str());
  EXPECT_THROW(Writer("/nonexistent/dir/trace"), TraceError);
}

}  // namespace
}  // namespace dmrt::bench::trace
