// bench/driver/group.h: the protocol of an experiment's compute processes (creator, barriers,
// client ids, heartbeats, a lost peer named by every survivor), over group words in plain memory.
#include "bench/driver/group.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace dmrt::bench {
namespace {

using namespace std::chrono_literals;

// The words of one group, shared by the RunGroups of a test (each stands for one process).
struct Words {
  std::array<std::atomic<uint64_t>, layout::kGroupWords> w{};
  std::array<std::atomic<uint64_t>, 4> node_beat{};  // memory nodes' heartbeats
};

class MemoryWords final : public GroupWords {
 public:
  explicit MemoryWords(std::shared_ptr<Words> w) : w_(std::move(w)) {}
  uint64_t load(unsigned i) override { return w_->w[i].load(); }
  void store(unsigned i, uint64_t v) override { w_->w[i].store(v); }
  uint64_t cas(unsigned i, uint64_t e, uint64_t d) override {
    w_->w[i].compare_exchange_strong(e, d);
    return e;
  }
  uint64_t faa(unsigned i, uint64_t a) override { return w_->w[i].fetch_add(a); }
  void load_range(unsigned first, unsigned n, uint64_t* out) override {
    for (unsigned i = 0; i < n; ++i) out[i] = w_->w[first + i].load();
  }
  uint64_t node_heartbeat(NodeId m) override { return w_->node_beat[m].load(); }
  bool fence(NodeId n) override {
    fenced_.push_back(n);
    return can_fence_;
  }
  bool can_fence_ = true;
  std::vector<NodeId> fenced_;

 private:
  std::shared_ptr<Words> w_;
};

// Rank r of `members` compute nodes (node ids 1..members), memory node 0 watched. `words`, when
// given, receives the member's GroupWords (to set what its fence does).
std::unique_ptr<RunGroup> member(const std::shared_ptr<Words>& w, unsigned rank, unsigned members,
                                 double peer_timeout = 30, double wait_seconds = 30,
                                 MemoryWords** words = nullptr) {
  GroupSpec g;
  for (unsigned i = 0; i < members; ++i) g.compute.push_back(static_cast<NodeId>(i + 1));
  g.rank = rank;
  g.memory = {0};
  g.peer_timeout = peer_timeout;
  g.wait_seconds = wait_seconds;
  g.label = "the test's group";
  auto mw = std::make_unique<MemoryWords>(w);
  if (words) *words = mw.get();
  return std::make_unique<RunGroup>(std::move(mw), g, nullptr);
}

// The most a verdict that the heartbeat threads reach in about a second may take on a loaded
// machine: CI's 2 cores run other tests beside these threads (a wait returns once it holds; the
// bounds themselves are checked with slack by tests/bench/cluster_kill.sh).
constexpr auto kSlow = std::chrono::milliseconds(15000);

// Polls `f` until true or `limit` passes.
template <class F>
bool within(std::chrono::milliseconds limit, F f) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!f()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(RunGroup, CreatorThenOthersThenBarriersAndUniqueClientIds) {
  auto w = std::make_shared<Words>();
  constexpr unsigned kMembers = 4;
  std::vector<std::unique_ptr<RunGroup>> g;
  for (unsigned r = 0; r < kMembers; ++r) g.push_back(member(w, r, kMembers));
  std::vector<uint32_t> first(kMembers);
  std::vector<std::thread> t;
  for (unsigned r = 0; r < kMembers; ++r)
    t.emplace_back([&, r] {
      first[r] = g[r]->take_client_ids(10);
      g[r]->barrier("start the load");
      if (g[r]->creator()) {
        g[r]->begin_create();
        std::this_thread::sleep_for(50ms);  // the load
        g[r]->ready(42);
      } else {
        g[r]->await_ready(42);
      }
      g[r]->barrier("start the run");
      g[r]->barrier("end the run");
      g[r]->finish();
    });
  for (auto& x : t) x.join();
  std::sort(first.begin(), first.end());
  for (unsigned r = 0; r < kMembers; ++r) {
    EXPECT_EQ(first[r], 10 * r);
    EXPECT_EQ(g[r]->slot_of_client(10 * r + 9), r);  // a client id names its process
    EXPECT_EQ(w->w[8 + r].load(), RunGroup::kFinished);
  }
  for (auto& x : g) EXPECT_EQ(x->lost(), "");
  g[0]->await_all_done();  // every member finished: returns at once
}

TEST(RunGroup, OneGroupServesOneRunAndChecksWhatWasBuilt) {
  auto w = std::make_shared<Words>();
  auto a = member(w, 0, 2), b = member(w, 1, 2, 30, 1);
  a->begin_create();
  EXPECT_THROW(a->begin_create(), ConfigError);  // set up already
  a->ready(7);
  try {
    b->await_ready(8);
    ADD_FAILURE() << "a different fingerprint was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("built for another run"), std::string::npos) << e.what();
  }
  auto c = member(std::make_shared<Words>(), 1, 2, 30, 1);
  try {
    c->await_ready(7);  // no creator ever comes
    ADD_FAILURE() << "waited for ever";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gave up after 1 s waiting for the first compute node"),
              std::string::npos)
        << e.what();
  }
}

TEST(RunGroup, ABarrierWithAMissingPartyGivesUpNamingHowManyCame) {
  auto w = std::make_shared<Words>();
  auto a = member(w, 0, 3, 30, 1), b = member(w, 1, 3, 30, 1);
  std::thread tb([&] { EXPECT_THROW(b->barrier("start the run"), ConfigError); });
  try {
    a->barrier("start the run");
    ADD_FAILURE() << "passed a barrier with a party missing";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("2 of 3 compute processes to start the run"),
              std::string::npos)
        << e.what();
  }
  tb.join();
}

TEST(RunGroup, AStoppedHeartbeatIsNamedByEverySurvivor) {
  auto w = std::make_shared<Words>();
  auto a = member(w, 0, 3, 0.6), b = member(w, 1, 3, 0.6);
  std::atomic<int> called{0};
  a->on_lost([&](const std::string&) { ++called; });
  w->w[8 + 2].store(5);  // rank 2 beat once, then died (no process beats it again)
  ASSERT_TRUE(within(kSlow, [&] { return !a->lost().empty() && !b->lost().empty(); }));
  for (auto* g : {a.get(), b.get()})
    EXPECT_NE(g->lost().find("compute node 3 (rank 2) is lost"), std::string::npos) << g->lost();
  EXPECT_EQ(called.load(), 1);
  EXPECT_EQ(w->w[4].load(), 3u);  // recorded for the others: rank 2 + 1
  // A barrier now ends at once with that news instead of waiting.
  EXPECT_THROW(a->barrier("start the run"), PeerLost);
}

TEST(RunGroup, APeerThatLeftOnAnErrorIsNamedAtOnce) {
  auto w = std::make_shared<Words>();
  auto a = member(w, 0, 2);
  member(w, 1, 2).reset();  // rank 1 started and unwound without finish()
  ASSERT_TRUE(within(kSlow, [&] { return !a->lost().empty(); }));
  EXPECT_NE(a->lost().find("compute node 2 (rank 1) left the run on an error"), std::string::npos)
      << a->lost();
}

TEST(RunGroup, AFinishedPeerIsNoLoss) {
  auto w = std::make_shared<Words>();
  auto a = member(w, 0, 2, 0.4);
  auto b = member(w, 1, 2, 0.4);
  b->finish();
  b.reset();
  std::this_thread::sleep_for(900ms);
  EXPECT_EQ(a->lost(), "");
}

TEST(RunGroup, AMemoryNodeWhoseHeartbeatStopsIsLost) {
  auto w = std::make_shared<Words>();
  w->node_beat[0] = 9;  // dmrt-node beat, then froze
  auto a = member(w, 0, 1, 0.5);
  ASSERT_TRUE(within(kSlow, [&] { return !a->lost().empty(); }));
  EXPECT_NE(a->lost().find("memory node 0 is lost"), std::string::npos) << a->lost();

  auto w2 = std::make_shared<Words>();
  auto b = member(w2, 0, 1, 30);
  w2->node_beat[0] = layout::kHeartbeatStopped;  // a dmrt-node that stopped cleanly
  ASSERT_TRUE(within(kSlow, [&] { return !b->lost().empty(); }));
  EXPECT_NE(b->lost().find("memory node 0 stopped serving"), std::string::npos) << b->lost();

  auto w3 = std::make_shared<Words>();  // never beat: served in-process, not watched
  auto c = member(w3, 0, 1, 0.3);
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(c->lost(), "");
}

// Each member's word counts the barriers it passed: a barrier is passed when every word says so.
TEST(RunGroup, BarrierCountsAreInTheHeartbeatWords) {
  auto w = std::make_shared<Words>();
  auto a = member(w, 0, 2), b = member(w, 1, 2);
  std::thread tb([&] { b->barrier("start the run"); });
  a->barrier("start the run");
  tb.join();
  for (unsigned r = 0; r < 2; ++r) EXPECT_EQ(w->w[8 + r].load() >> 56, 1u);
}

// --on-peer-loss continue: a compute process whose heartbeat stops is fenced and declared dead,
// the others pass their barriers without it and are not lost; a lock waiter can ask about its
// client ids.
TEST(RunGroup, AFencedDeadPeerIsLeftBehindWhenSurvivable) {
  auto w = std::make_shared<Words>();
  MemoryWords* aw = nullptr;
  auto a = member(w, 0, 3, 0.6, 30, &aw), b = member(w, 1, 3, 0.6);
  for (auto* g : {a.get(), b.get()}) {
    g->take_client_ids(10);
    g->survive_compute_loss();
  }
  w->w[8 + 2].store(5);  // rank 2 beat once, then died
  ASSERT_TRUE(within(kSlow, [&] { return a->is_dead(2) && b->is_dead(2); }));
  EXPECT_EQ(a->lost(), "");
  EXPECT_EQ(b->lost(), "");
  EXPECT_EQ(w->w[8 + 2].load(), RunGroup::kDead);
  EXPECT_EQ(a->dead(), (std::vector<unsigned>{2}));
  EXPECT_EQ(a->slot_of_client(25), 2u);
  std::thread tb([&] { b->barrier("end the run"); });
  a->barrier("end the run");  // passes: rank 2 is dead
  tb.join();
  a->finish();
  b->finish();
  a->await_all_done();  // dead counts as done
}

// A peer declared rank 2 dead after this process finished (its own heartbeat checks have
// stopped): the end of the run, which passes on that word, names it all the same, so that the
// creator merges the parts of the living only.
TEST(RunGroup, APeerDeclaredDeadAfterFinishIsNamed) {
  auto w = std::make_shared<Words>();
  auto a = member(w, 0, 3), b = member(w, 1, 3);
  for (auto* g : {a.get(), b.get()}) g->survive_compute_loss();
  a->finish();
  b->finish();
  w->w[8 + 2].store(RunGroup::kDead);  // as a third process's declare_dead() leaves it
  a->await_all_done();
  EXPECT_EQ(a->dead(), (std::vector<unsigned>{2}));
  EXPECT_EQ(a->lost(), "");
}

// A replacement for a dead rank: refused before the run phase began; mid-run it takes the next
// slot (its own client ids and process tag), links it from the dead slot, and counts at the
// barriers for its rank; a second one, and any after the run ended, are refused.
TEST(RunGroup, AReplacementTakesADeadRanksPlaceMidRun) {
  auto w = std::make_shared<Words>();
  auto a = member(w, 0, 3), b = member(w, 1, 3);
  w->w[8 + 2].store(RunGroup::kDead);  // rank 2 died and was fenced
  EXPECT_THROW(member(w, 2, 3), ConfigError);  // no run phase under way yet
  std::thread tb([&] { b->barrier("start the run"); });
  a->barrier("start the run");
  tb.join();
  a->run_started();
  b->run_started();
  auto c = member(w, 2, 3);
  EXPECT_EQ(c->slot(), 3u);
  EXPECT_EQ(c->incarnation(), 1u);
  EXPECT_EQ(c->take_client_ids(10), 30u);
  EXPECT_EQ(w->w[8 + 2].load(), RunGroup::kReplaced | 3);
  EXPECT_THROW(member(w, 2, 3), ConfigError);  // rank 2 runs again
  // The end barrier waits for the replacement, as for any member.
  std::atomic<bool> passed{false};
  std::thread ta([&] {
    a->barrier("end the run");
    passed = true;
  });
  std::thread tb2([&] { b->barrier("end the run"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(passed.load());
  c->barrier("end the run");
  ta.join();
  tb2.join();
  a->run_ended();
  for (auto* g : {a.get(), b.get(), c.get()}) g->finish();
  a->await_all_done();
  const auto incs = a->incarnations();
  ASSERT_EQ(incs.size(), 4u);
  EXPECT_TRUE(incs[2].rank == 2 && incs[2].number == 0 && incs[2].slot == 2 && incs[2].dead);
  EXPECT_TRUE(incs[3].rank == 2 && incs[3].number == 1 && incs[3].slot == 3 && !incs[3].dead);
  EXPECT_THROW(member(w, 2, 3), ConfigError);  // the run has ended
}

// Where the fence fails (another host's process), or the creator stops: lost, as without it.
TEST(RunGroup, AnUnfencedOrCreatorPeerIsStillLost) {
  auto w = std::make_shared<Words>();
  MemoryWords* aw = nullptr;
  auto a = member(w, 0, 3, 0.6, 30, &aw);
  aw->can_fence_ = false;
  a->survive_compute_loss();
  w->w[8 + 1].store(5);
  ASSERT_TRUE(within(kSlow, [&] { return !a->lost().empty(); }));
  EXPECT_NE(a->lost().find("compute node 2 (rank 1) is lost"), std::string::npos) << a->lost();
  EXPECT_FALSE(a->is_dead(1));

  auto w2 = std::make_shared<Words>();
  auto c = member(w2, 1, 2, 0.6);
  c->survive_compute_loss();
  w2->w[8 + 0].store(5);  // the creator stops
  ASSERT_TRUE(within(kSlow, [&] { return !c->lost().empty(); }));
  EXPECT_NE(c->lost().find("compute node 1 (rank 0) is lost"), std::string::npos) << c->lost();
}

TEST(RunGroup, NodePathsExpand) {
  EXPECT_EQ(expand_node("r{node}.json", 3), "r3.json");
  EXPECT_EQ(expand_node("{node}/h{node}", 12), "12/h12");
  EXPECT_EQ(expand_node("plain.json", 3), "plain.json");
}

}  // namespace
}  // namespace dmrt::bench
