// The RDWC combiner (dmrt/indexes/common/rdwc.h, as DMTree uses it) when a remote operation fails:
// the failure reaches every member of the round that shared it, and the slot is free again (no
// member waits for a result that never comes).
#include <gtest/gtest.h>

#include <boost/fiber/all.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "dmrt/indexes/common/rdwc.h"

namespace dmrt::dmtree {
using rdwc::Combiner;
namespace {

// What Combiner::run needs of a client: a pause that lets the other fibers of the thread run.
struct FiberClient {
  void pause() { boost::this_fiber::yield(); }
};

struct Outcome {
  bool returned = false, value = false, threw = false;
  std::string error;
};

// Runs `n` fibers on this thread; fiber i calls combiner.run(key 7, write) with direct(i).
// Fiber 0 starts first and leads; the others queue behind it while its direct() yields.
template <class Direct>
std::vector<Outcome> run_fibers(Combiner& comb, unsigned n, bool write, Direct direct) {
  std::vector<Outcome> out(n);
  std::vector<boost::fibers::fiber> fibers;
  for (unsigned i = 0; i < n; ++i)
    fibers.emplace_back([&, i] {
      FiberClient c;
      std::string s;
      try {
        out[i].value = comb.run(c, 7, write, "v", write ? nullptr : &s,
                                [&](std::string_view, std::string*) { return direct(i); });
        out[i].returned = true;
      } catch (const std::runtime_error& e) {
        out[i].threw = true;
        out[i].error = e.what();
      }
    });
  for (auto& f : fibers) f.join();
  return out;
}

// Yields long enough for every other fiber to queue behind the caller.
void let_others_queue() {
  for (int i = 0; i < 16; ++i) boost::this_fiber::yield();
}

TEST(DmtreeCombiner, LeaderFailureLetsTheQueuedRoundRun) {
  Combiner comb(64, 8);
  unsigned calls = 0;
  auto out = run_fibers(comb, 4, true, [&](unsigned i) {
    ++calls;
    let_others_queue();
    if (i == 0) throw std::runtime_error("leader lost its connection");
    return true;
  });
  EXPECT_TRUE(out[0].threw);
  EXPECT_EQ(out[0].error, "leader lost its connection");
  // The three queued fibers formed the next round: one led it, the others shared its result.
  for (unsigned i = 1; i < 4; ++i) EXPECT_TRUE(out[i].returned && out[i].value) << i;
  EXPECT_EQ(calls, 2u);
  EXPECT_EQ(comb.shared(), 2u);
  // The slot is free: the next call leads at once.
  FiberClient c;
  EXPECT_TRUE(
      comb.run(c, 7, true, "v", nullptr, [](std::string_view, std::string*) { return true; }));
}

TEST(DmtreeCombiner, RoundLeaderFailureReachesEveryMember) {
  for (bool write : {true, false}) {
    Combiner comb(64, 8);
    auto out = run_fibers(comb, 4, write, [&](unsigned i) -> bool {
      let_others_queue();
      if (i != 0) throw std::runtime_error("pool exhausted");
      return true;
    });
    EXPECT_TRUE(out[0].returned && out[0].value);
    for (unsigned i = 1; i < 4; ++i) {
      EXPECT_TRUE(out[i].threw) << i;
      EXPECT_EQ(out[i].error, "pool exhausted") << i;
    }
    FiberClient c;
    std::string s;
    EXPECT_FALSE(comb.run(c, 7, write, "v", write ? nullptr : &s,
                          [](std::string_view, std::string*) { return false; }));
  }
}

// Byte-string keys share a round only when they are the same bytes: with one slot every key lands
// in it, so a different key (even one that differs in its last byte, or only in length) runs
// directly, and only the same bytes queue: the two queued requests of keys[0] form the next round,
// one leads it and the other takes its result.
TEST(DmtreeCombiner, ByteKeysShareOnlyTheSameBytes) {
  Combiner comb(1, 8);
  const std::string keys[] = {std::string(40, 'k') + "a", std::string(40, 'k') + "b",
                              std::string(40, 'k'), std::string(40, 'k') + "a",
                              std::string(40, 'k') + "a"};
  std::vector<std::string> got(5);
  std::vector<int> calls(5, 0);
  std::vector<boost::fibers::fiber> fibers;
  for (unsigned i = 0; i < 5; ++i)
    fibers.emplace_back([&, i] {
      FiberClient c;
      comb.run(c, std::string_view(keys[i]), false, {}, &got[i],
               [&](std::string_view, std::string* o) {
                 ++calls[i];
                 let_others_queue();
                 *o = "value of " + keys[i];
                 return true;
               });
    });
  for (auto& f : fibers) f.join();
  EXPECT_EQ(calls[0], 1);             // led the round of keys[0]
  EXPECT_EQ(calls[1], 1);             // another key: ran directly
  EXPECT_EQ(calls[2], 1);             // a prefix of keys[0]: another key, ran directly
  EXPECT_EQ(calls[3] + calls[4], 1);  // keys[0] again, twice: one round, one remote search
  for (unsigned i = 0; i < 5; ++i) EXPECT_EQ(got[i], "value of " + keys[i]) << i;
  EXPECT_EQ(comb.direct_runs(), 2u);
  EXPECT_EQ(comb.delegated(), 1u);
  // An integer key and its 8 bytes are different names to the combiner (an index uses one form).
  FiberClient c;
  std::string s;
  EXPECT_TRUE(comb.run(c, Key{7}, false, {}, &s, [](std::string_view, std::string* o) {
    *o = "x";
    return true;
  }));
}

}  // namespace
}  // namespace dmrt::dmtree
