// Issue 39: a RACE insert or splitter whose process dies mid-way. A dead splitter
// (Options::faults.split_dies_at) leaves S's canonical lock, maybe N's and the root lock, naming
// its process; a survivor told that process is dead rolls the split forward after the lease:
// every acknowledged key stays, with its value, in exactly one slot, and no directory lock stays
// held. A dead inserter's claim is cancelled by the next insert of its key.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "dmrt/runtime/liveness.h"
#include "race_test_util.h"

#ifdef DMRT_FAULT_INJECTION
namespace dmrt::race::testing {
namespace {

constexpr uint8_t kDeadTag = 7;

// Process tags as a group's Liveness would give them: `tag` for this client; kDeadTag is dead.
struct Tags final : Liveness {
  explicit Tags(uint8_t t) : tag(t) {}
  uint8_t tag;
  bool fenced_dead(uint32_t) const override { return false; }
  uint8_t process_tag(uint32_t) const override { return tag; }
  bool tag_dead(uint8_t t) const override { return t == kDeadTag; }
};

Options small() {
  Options o;
  o.groups_per_subtable = 4;  // a split every few dozen keys
  o.initial_global_depth = 1;
  o.value_size = 16;
  return o;
}

// Every directory word (root and used entries) unlocked, as a quiescent index leaves them.
void expect_directory_unlocked(ShmIndex& idx, ShmClient& c) {
  uint64_t root = c.template read_value<uint64_t>(idx.directory());
  EXPECT_FALSE(Dir::locked(root)) << "root lock held";
  for (uint64_t j = 0; j < (uint64_t{1} << Dir::gd(root)); ++j) {
    uint64_t e = c.template read_value<uint64_t>(Dir::entry_addr(idx.directory(), j));
    EXPECT_FALSE(Dir::locked(e)) << "entry " << j << " locked by tag " << int{Dir::entry_owner(e)};
  }
}

// Two processes on one pool: client 0's (tag kDeadTag, its index with `faults`), about to die,
// and client 1's, a survivor told that kDeadTag is dead.
struct TwoProcesses {
  explicit TwoProcesses(Options::Faults faults)
      : p(pool(1)), c0(client(p, 0)), c1(client(p, 1)), dying(kDeadTag), survivor(2) {
    c0.set_liveness(&dying);
    c1.set_liveness(&survivor);
    Options doomed = small();
    doomed.faults = faults;
    idx0 = ShmIndex::create(c0, doomed);
  }
  std::shared_ptr<shm::Pool> p;
  ShmClient c0, c1;
  Tags dying, survivor;
  std::shared_ptr<ShmIndex> idx0;
};

class RaceDeadSplitter : public ::testing::TestWithParam<SplitDeath> {};

TEST_P(RaceDeadSplitter, ASurvivorRollsTheSplitForward) {
  Options::Faults f;
  f.split_dies_at = GetParam();
  TwoProcesses t(f);
  ShmClient &c0 = t.c0, &c1 = t.c1;
  auto h0 = t.idx0->handle(c0);
  std::map<uint64_t, std::string> acked;
  uint64_t k = 1;
  bool died = false;
  for (; k < 100'000 && !died; ++k) {
    std::string v = value_for(k, 0, 16);
    try {
      ASSERT_TRUE(h0.insert(k, v));
      acked[k] = v;
    } catch (const SplitterDied&) {
      died = true;  // k was in flight: present or not, both are right
    }
  }
  ASSERT_TRUE(died) << "no split reached the fault";
  const uint64_t in_flight = k - 1;

  auto idx1 = ShmIndex::attach(c1, small());
  auto h1 = idx1->handle(c1);
  // Enough inserts to split every subtable again, through whatever the dead splitter holds.
  const uint64_t end = k + 4 * acked.size() + 400;
  for (; k < end; ++k) {
    std::string v = value_for(k, 0, 16);
    ASSERT_TRUE(h1.insert(k, v)) << k;
    acked[k] = v;
  }
  // Updates and deletes after the roll-forward.
  for (uint64_t u = 1; u < 200; u += 3) {
    if (!acked.count(u)) continue;
    std::string v = value_for(u, 1, 16);
    ASSERT_TRUE(h1.update(u, v)) << u;
    acked[u] = v;
  }
  for (uint64_t d = 2; d < 200; d += 5) {
    if (!acked.count(d)) continue;
    ASSERT_TRUE(h1.remove(d)) << d;
    acked.erase(d);
  }
  std::string out;
  for (const auto& [key, v] : acked) {
    ASSERT_TRUE(h1.search(key, out)) << key;
    EXPECT_EQ(out, v) << key;
  }
  for (const auto& [key, n] : copies(*idx1, c1)) {
    if (key == in_flight) continue;
    EXPECT_EQ(n, 1) << "key " << key << " has " << n << " copies";
    EXPECT_TRUE(acked.count(key)) << "key " << key << " was deleted or never inserted";
  }
  auto st = idx1->stats(c1);
  EXPECT_GE(st.at("locks_taken_over"), 1.0);
  expect_directory_unlocked(*idx1, c1);
}

INSTANTIATE_TEST_SUITE_P(Steps, RaceDeadSplitter,
                         ::testing::Values(SplitDeath::kAfterCreate, SplitDeath::kAfterPublish,
                                           SplitDeath::kMidMove, SplitDeath::kAfterMove,
                                           SplitDeath::kMidFinish),
                         [](const auto& info) {
                           switch (info.param) {
                             case SplitDeath::kAfterCreate:
                               return std::string("AfterCreate");
                             case SplitDeath::kAfterPublish:
                               return std::string("AfterPublish");
                             case SplitDeath::kMidMove:
                               return std::string("MidMove");
                             case SplitDeath::kAfterMove:
                               return std::string("AfterMove");
                             case SplitDeath::kMidFinish:
                               return std::string("MidFinish");
                             default:
                               return std::string("Never");
                           }
                         });

// A live splitter's lock is never taken: a process tag that is not dead only waits.
TEST(RaceDeadSplitter, ALiveSplittersLocksAreNotTaken) {
  auto p = pool(1);
  auto c = client(p, 0);
  Tags live(3);
  c.set_liveness(&live);
  auto idx = ShmIndex::create(c, small());
  auto h = idx->handle(c);
  for (uint64_t k = 1; k <= 3000; ++k) ASSERT_TRUE(h.insert(k, value_for(k, 0, 16)));
  auto st = idx->stats(c);
  EXPECT_GT(st.at("resizes"), 3.0);
  EXPECT_EQ(st.at("locks_taken_over"), 0.0);
  expect_directory_unlocked(*idx, c);
}

// A claim (an insert's tentative slot) names no process. One whose process died is cancelled by
// an insert of the same key once it stood for the lease while a process is dead; that insert
// then succeeds, and the key is there once.
TEST(RaceDeadClaimer, AnInsertOfTheKeyCancelsTheDeadClaim) {
  Options::Faults f;
  f.insert_dies_after_claim = true;
  TwoProcesses t(f);
  ShmClient &c0 = t.c0, &c1 = t.c1;
  auto h0 = t.idx0->handle(c0);
  EXPECT_THROW(h0.insert(42, value_for(42, 0, 16)), ClaimerDied);
  auto idx1 = ShmIndex::attach(c1, small());
  auto h1 = idx1->handle(c1);
  ASSERT_TRUE(h1.insert(42, value_for(42, 1, 16)));
  ASSERT_FALSE(h1.insert(42, value_for(42, 2, 16)));
  std::string out;
  ASSERT_TRUE(h1.search(42, out));
  EXPECT_EQ(out, value_for(42, 1, 16));
  EXPECT_EQ(copies(*idx1, c1)[42], 1);
  EXPECT_EQ(idx1->stats(c1).at("claims_cancelled"), 1.0);
}

}  // namespace
}  // namespace dmrt::race::testing
#endif  // DMRT_FAULT_INJECTION
