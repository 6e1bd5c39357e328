// A history that outlives its process (dmrt/check/journal.h, issue 39): a process killed with
// SIGKILL mid-run leaves every operation it completed, and its one in flight as pending, for the
// check of the run's union; a journal is read as untrusted bytes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "dmrt/check/history_io.h"
#include "dmrt/check/journal.h"
#include "dmrt/check/linearizability.h"
#include "tests/hostile/temp_file.h"

namespace dmrt::history_journal_test {
namespace {

std::string tmp(const std::string& name) {
  return testing::temp_file("journal_" + name);
}

Operation op(OpKind kind, uint32_t client, Key key, uint64_t arg, uint64_t t0) {
  Operation o;
  o.kind = kind;
  o.client = client;
  o.key = key;
  o.arg = arg;
  o.invoke_ns = t0;
  return o;
}

// Node 1's process journals three operations: an insert and a scan that return, then an update
// of key 7 that is invoked and never returns: the process is killed there.
void journal_then_die(const std::string& path) {
  auto j = HistoryJournal::create(path, 64, 64, 0, {1, 2});
  size_t i = j->invoke(op(OpKind::kInsert, 0, 7, value_hash("seven"), 10));
  j->respond(i, true, 0, 20);
  i = j->invoke(op(OpKind::kScan, 0, 1, 10, 21));
  const ScanRow rows[] = {{7, value_hash("seven")}};
  j->respond_scan(i, rows, 22);
  j->invoke(op(OpKind::kUpdate, 0, 7, value_hash("eight"), 25));
  std::raise(SIGKILL);
}

std::string reader_part(const char* value) {
  History reader;
  HistoryRecorder r(1);
  r.search(7, true, value, 30, 40);
  reader.append(std::move(r));
  reader.part_rank = 1;
  reader.part_nodes = {1, 2};
  const std::string path = tmp(std::string("reader_") + value);
  save_history(reader, path);
  return path;
}

TEST(HistoryJournal, SurvivesSigkillWithItsInFlightOperationPending) {
  const std::string path = tmp("killed");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) journal_then_die(path);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  ASSERT_TRUE(is_history_journal(path));
  const History h = load_history_journal(path);
  EXPECT_EQ(h.part_rank, 0u);
  EXPECT_EQ(h.part_nodes, (std::vector<uint32_t>{1, 2}));
  ASSERT_EQ(h.ops.size(), 3u);
  EXPECT_EQ(h.ops[0].kind, OpKind::kInsert);
  EXPECT_EQ(h.ops[0].response_ns, 20u);
  EXPECT_TRUE(h.ops[0].ok);
  ASSERT_EQ(h.ops[1].kind, OpKind::kScan);
  ASSERT_EQ(h.rows_of(h.ops[1]).size(), 1u);
  EXPECT_EQ(h.rows_of(h.ops[1])[0].key, 7u);
  EXPECT_TRUE(h.ops[2].pending());

  // The union with the survivor's part: its read of either value is linearizable (the update
  // may or may not have taken effect), a value nobody wrote is not.
  for (const char* seen : {"seven", "eight"}) {
    const History u = load_history_union({path, reader_part(seen)});
    EXPECT_TRUE(check_history(u).linearizable) << seen << check_history(u).explain();
  }
  EXPECT_FALSE(check_history(load_history_union({path, reader_part("nine")})).linearizable);
}

TEST(HistoryJournal, ClaimedButUnwrittenSlotsAreOperationsNotStarted) {
  const std::string path = tmp("claimed");
  {
    auto j = HistoryJournal::create(path, 4, 4, 0, {1});
    j->respond(j->invoke(op(OpKind::kInsert, 0, 3, 1, 5)), true, 0, 6);
  }
  // A slot claimed by the counter whose state word was never written: the process died between.
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint64_t next = 2;
  ASSERT_EQ(::pwrite(fd, &next, 8, 24), 8);  // Header::next_op
  ::close(fd);
  EXPECT_EQ(load_history_journal(path).ops.size(), 1u);
}

// Each corruption, as a hostile writer of the file would make it, is an error naming the file.
TEST(HistoryJournal, CorruptJournalsAreRefused) {
  struct Case {
    const char* name;
    off_t at;
    uint64_t value;
  };
  const Case cases[] = {
      {"ops capacity past the file", 8, uint64_t{1} << 40},
      {"rows capacity past the file", 16, 12345},
      {"next_op past the capacity (filled up)", 24, 5},
      {"next_row past the capacity", 32, 99},
      {"rank past its members", 40, uint64_t{7} | uint64_t{2} << 32},
      {"members past the limit", 40, uint64_t{0} | uint64_t{100000} << 32},
      {"a slot's state word", 4096 + 56, 77},
      {"a slot's kind", 4096 + 48, 0xff},
      {"a scan's rows outside", 4096 + 64 + 32, 1000},
  };
  for (const Case& c : cases) {
    const std::string path = tmp("corrupt");
    {
      auto j = HistoryJournal::create(path, 4, 4, 0, {1});
      j->respond(j->invoke(op(OpKind::kInsert, 0, 3, 1, 5)), true, 0, 6);
      const size_t s = j->invoke(op(OpKind::kScan, 0, 1, 2, 7));
      const ScanRow rows[] = {{3, 1}};
      j->respond_scan(s, rows, 8);
    }
    const int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, &c.value, 8, c.at), 8);
    ::close(fd);
    try {
      load_history_journal(path);
      ADD_FAILURE() << c.name << ": accepted";
    } catch (const HistoryFormatError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << c.name << ": " << e.what();
    }
  }
  // Not a journal at all, and a file shorter than a header.
  const std::string path = tmp("short");
  {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    ASSERT_EQ(::write(fd, "DMRTJRN1", 8), 8);
    ::close(fd);
  }
  EXPECT_THROW(load_history_journal(path), HistoryFormatError);
  EXPECT_FALSE(is_history_journal("/dev/null"));
}

}  // namespace
}  // namespace dmrt::history_journal_test
