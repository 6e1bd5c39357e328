// The parts of a multi-process history (issue 39): each says which part of its run it is, and a
// set with parts missing is refused (naming them) unless the caller allows a partial check; one
// process's part alone reported a false violation with no warning.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "dmrt/check/history_io.h"
#include "tests/hostile/temp_file.h"

namespace dmrt::history_parts_test {
namespace {

std::string tmp(const std::string& name) {
  return testing::temp_file("parts_" + name);
}

// A part holding one search of key 7 by `client`, saved as `name`.
std::string save_search_part(const std::string& name, uint32_t client, bool found,
                             const std::string& value, uint64_t t0, uint64_t t1, uint32_t rank,
                             std::vector<uint32_t> nodes, uint32_t incarnation = 0) {
  History part;
  HistoryRecorder r(client);
  r.search(7, found, value, t0, t1);
  part.append(std::move(r));
  part.part_rank = rank;
  part.part_incarnation = incarnation;
  part.part_nodes = std::move(nodes);
  save_history(part, tmp(name));
  return tmp(name);
}

// A two-process run on compute nodes 1 and 2: node 1 inserts key 7, node 2 reads it back. Node
// 2's part alone reads a value nobody wrote.
std::vector<std::string> save_parts(const std::string& tag) {
  History writer, reader;
  HistoryRecorder w(0), r(1);
  w.insert(7, "seven", true, 10, 20);
  r.search(7, true, "seven", 30, 40);
  writer.append(std::move(w));
  reader.append(std::move(r));
  writer.part_rank = 0;
  reader.part_rank = 1;
  writer.part_nodes = reader.part_nodes = {1, 2};
  const std::vector<std::string> files = {tmp(tag + "1"), tmp(tag + "2")};
  save_history(writer, files[0]);
  save_history(reader, files[1]);
  return files;
}

// A copy of part `from` whose operations are client `client`'s: the same part again, as if another
// process had written it (a file given twice would be refused for its clients first).
std::string renumbered_copy(const std::string& from, uint32_t client, const std::string& tag) {
  History again = load_history(from);
  for (Operation& op : again.ops) op.client = client;
  save_history(again, tmp(tag));
  return tmp(tag);
}

TEST(HistoryParts, PartLineRoundTrips) {
  const auto files = save_parts("rt");
  History h = load_history(files[1]);
  EXPECT_EQ(h.part_rank, 1u);
  EXPECT_EQ(h.part_nodes, (std::vector<uint32_t>{1, 2}));
  std::ifstream in(files[1]);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(second, "# part 1 of 2 nodes 1 2");
}

TEST(HistoryParts, MissingPartsAreRefusedAndNamed) {
  const auto files = save_parts("missing");
  try {
    load_history_union({files[1]});
    FAIL() << "one part of two was accepted";
  } catch (const HistoryIncomplete& e) {
    EXPECT_NE(std::string(e.what()).find("the parts of 1 of the run's 2 compute processes (nodes "
                                         "2; missing: node 1)"),
              std::string::npos)
        << e.what();
  }
  // Allowed: the caller gets the sentence and the union of what is there.
  std::string partial;
  History h = load_history_union({files[1]}, {}, nullptr, &partial);
  EXPECT_EQ(h.ops.size(), 1u);
  EXPECT_NE(partial.find("missing: node 1"), std::string::npos);
  // Complete: no sentence.
  h = load_history_union(files, {}, nullptr, &partial);
  EXPECT_EQ(h.ops.size(), 2u);
  EXPECT_EQ(partial, "");
  EXPECT_TRUE(h.part_nodes.empty());  // the union is a whole history
}

TEST(HistoryParts, PartsOfOtherRunsOrTwiceAreRefused) {
  const auto files = save_parts("mix");
  save_search_part("mix_other", 5, false, "", 1, 2, 0, {1, 3});
  EXPECT_THROW(load_history_union({files[1], tmp("mix_other")}), HistoryFormatError);
  // Rank 1 twice, from different clients (a copy renumbered): refused, naming both files.
  try {
    load_history_union({files[0], files[1], renumbered_copy(files[1], 9, "mix_again")});
    FAIL() << "a part given twice was accepted";
  } catch (const HistoryFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("part 1 (node 2) is both"), std::string::npos) << e.what();
  }
}

// A replacement of a dead process (incarnation 1 of rank 1) has a part of its own: with it, the
// set is whole only with the dead incarnation's part (its journal, here its file) as well.
TEST(HistoryParts, ReplacementsArePartsOfTheirRank) {
  const auto files = save_parts("inc");
  save_search_part("inc_r", 9, true, "seven", 50, 60, 1, {1, 2}, 1);
  {
    std::ifstream in(tmp("inc_r"));
    std::string first, second;
    std::getline(in, first);
    std::getline(in, second);
    EXPECT_EQ(second, "# part 1 of 2 nodes 1 2 incarnation 1");
  }
  EXPECT_EQ(load_history(tmp("inc_r")).part_incarnation, 1u);
  History h = load_history_union({files[0], files[1], tmp("inc_r")});
  EXPECT_EQ(h.ops.size(), 3u);
  try {
    load_history_union({files[0], tmp("inc_r")});
    FAIL() << "a replacement's part without the part of the process it replaced was accepted";
  } catch (const HistoryIncomplete& e) {
    EXPECT_NE(std::string(e.what()).find("missing: node 2)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nodes 1, 2 incarnation 1;"), std::string::npos)
        << e.what();
  }
  try {
    load_history_union(
        {files[0], files[1], tmp("inc_r"), renumbered_copy(tmp("inc_r"), 11, "inc_r2")});
    FAIL() << "an incarnation given twice was accepted";
  } catch (const HistoryFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("part 1 incarnation 1 (node 2) is both"),
              std::string::npos)
        << e.what();
  }
}

TEST(HistoryParts, MalformedPartLinesAreRefused) {
  for (const char* line :
       {"# part 2 of 2 nodes 1 2", "# part 0 of 0 nodes", "# part x of 2",
        "# part 0 of 3 nodes 1 2", "# part 0 of 99999999 nodes 1", "# part 0 of 2 nodes 1 -2",
        "# part 0 of 2 nodes 1 2 incarnation x", "# part 0 of 2 nodes 1 2 incarnation"}) {
    const std::string path = tmp("bad");
    {
      std::ofstream f(path, std::ios::trunc);
      f << "# dmrt history 2\n" << line << "\n# end 0 operations\n";
    }
    EXPECT_THROW(load_history(path), HistoryFormatError) << line;
  }
  // A file without a part line (older dmrt, or one process) is a whole history, as before.
  const std::string path = tmp("old");
  {
    std::ofstream f(path, std::ios::trunc);
    f << "# dmrt history 2\ninsert 0 7 1 0 1 10 20\n# end 1 operations\n";
  }
  std::string partial;
  EXPECT_EQ(load_history_union({path}, {}, nullptr, &partial).ops.size(), 1u);
  EXPECT_EQ(partial, "");
}

std::string check_bin() {
  const char* b = std::getenv("DMRT_CHECK_BIN");
  return b ? b : "";
}

int run(const std::string& cmd, std::string& out) {
  out.clear();
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// dmrt-check on one process's part: refused with the missing node named (it used to report the
// false violation with no word); --allow-partial checks it and says the verdict may be wrong.
TEST(HistoryParts, DmrtCheckRefusesAnIncompleteSet) {
  ASSERT_NE(check_bin(), "") << "DMRT_CHECK_BIN is not set (meson sets it)";
  const auto files = save_parts("bin");
  std::string out;
  EXPECT_EQ(run(check_bin() + " " + files[1], out), 2) << out;
  EXPECT_NE(out.find("missing: node 1"), std::string::npos) << out;
  EXPECT_NE(out.find("--allow-partial"), std::string::npos) << out;
  EXPECT_NE(run(check_bin() + " --allow-partial " + files[1], out), 0) << out;
  EXPECT_NE(out.find("partial: the parts of 1 of the run's 2"), std::string::npos) << out;
  EXPECT_EQ(run(check_bin() + " " + files[0] + " " + files[1], out), 0) << out;
  EXPECT_EQ(out.find("partial"), std::string::npos) << out;
  EXPECT_NE(run(check_bin() + " --help", out), 2);
  EXPECT_NE(out.find("false"), std::string::npos) << "--help says a partial check may mislead";
}

}  // namespace
}  // namespace dmrt::history_parts_test
