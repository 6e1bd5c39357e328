// RACE under threads x fibers: resizing with concurrent IDU and searches, same-key insert races.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <random>
#include <vector>

#include "dmrt/runtime/scheduler.h"
#include "race_test_util.h"

namespace dmrt::race {
namespace {

using namespace testing;

unsigned scale() {
  const char* s = std::getenv("RACE_SCALE");
  return s ? static_cast<unsigned>(std::max(1, std::atoi(s))) : 1;
}

// --- 4. splits and doublings while others insert, update, delete and search ---------------------
TEST(RaceConcurrency, ResizingLosesAndDuplicatesNothing) {
  auto p = pool();
  Options o;
  o.value_size = 32;
  o.groups_per_subtable = 16;  // 336 slots a subtable: many splits
  o.initial_global_depth = 0;
  std::shared_ptr<ShmIndex> idx;
  {
    auto c = client(p, 1000);
    idx = ShmIndex::create(c, o);
  }
  constexpr unsigned kThreads = 2, kFibers = 8;
  const uint64_t per_writer = 3000 * scale();
  // Writer state, one per worker (even workers write, odd ones search).
  struct Model {
    std::map<uint64_t, uint64_t> version;  // present keys -> latest version
    std::vector<uint64_t> deleted;
  };
  std::vector<Model> models(kThreads * kFibers);
  std::atomic<unsigned> writers_done{0};
  std::atomic<uint64_t> searches{0}, hits{0};
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& w) {
    ShmClient c(shm::Endpoint(p, compute_node(p), w.index));
    auto h = idx->handle(c);
    std::mt19937_64 rng(w.index);
    std::string out;
    if (w.index % 2 == 0) {
      Model& m = models[w.index];
      for (uint64_t i = 0; i < per_writer; ++i) {
        uint64_t k = (uint64_t{w.index} << 32) | i;
        ASSERT_TRUE(h.insert(k, value_for(k, 0, 20))) << k;
        m.version[k] = 0;
        uint64_t r = rng() % 8;
        if (r < 3 && !m.version.empty()) {  // update one of ours
          auto it = m.version.lower_bound((uint64_t{w.index} << 32) | (rng() % (i + 1)));
          if (it == m.version.end()) it = m.version.begin();
          uint64_t v = it->second + 1;
          ASSERT_TRUE(h.update(it->first, value_for(it->first, v, 20))) << it->first;
          it->second = v;
        } else if (r == 3) {  // delete one of ours
          auto it = m.version.lower_bound((uint64_t{w.index} << 32) | (rng() % (i + 1)));
          if (it == m.version.end()) it = m.version.begin();
          ASSERT_TRUE(h.remove(it->first)) << it->first;
          m.deleted.push_back(it->first);
          m.version.erase(it);
        }
        // Our own present keys are always found with their latest value.
        if (i % 16 == 0) {
          auto it = m.version.begin();
          std::advance(it, rng() % m.version.size());
          ASSERT_TRUE(h.search(it->first, out)) << it->first;
          ASSERT_EQ(out, value_for(it->first, it->second, 20));
        }
        if (i % 8 == 0) c.pause();
      }
      writers_done.fetch_add(1);
    } else {
      while (writers_done.load() < kThreads * kFibers / 2) {
        unsigned writer = 2 * static_cast<unsigned>(rng() % (kThreads * kFibers / 2));
        uint64_t k = (uint64_t{writer} << 32) | (rng() % per_writer);
        if (h.search(k, out)) {
          ASSERT_TRUE(value_names_key(out, k)) << k << " -> " << out;
          hits.fetch_add(1, std::memory_order_relaxed);
        }
        searches.fetch_add(1, std::memory_order_relaxed);
        c.pause();
      }
    }
  });
  auto c = client(p, 1001);
  auto h = idx->handle(c);
  auto n = copies(*idx, c);
  size_t expected = 0;
  std::string out;
  for (auto& m : models) {
    expected += m.version.size();
    for (auto& [k, v] : m.version) {
      ASSERT_EQ(n[k], 1) << "key " << k << " copies";
      ASSERT_TRUE(h.search(k, out)) << k;
      ASSERT_EQ(out, value_for(k, v, 20));
    }
    for (uint64_t k : m.deleted) {
      ASSERT_EQ(n.count(k), 0u) << "deleted key " << k << " still stored";
      ASSERT_FALSE(h.search(k, out));
    }
  }
  EXPECT_EQ(n.size(), expected);
  auto s = idx->stats(c);
  std::printf(
      "resizes %.0f, global depth %.0f, subtables %.0f, load factor %.3f, searches %llu "
      "(%llu hits)\n",
      s.at("resizes"), s.at("global_depth"), s.at("subtables"), s.at("load_factor"),
      static_cast<unsigned long long>(searches.load()),
      static_cast<unsigned long long>(hits.load()));
  EXPECT_GT(s.at("resizes"), 10.0);
  EXPECT_GE(s.at("global_depth"), 4.0);
}

// --- 5. many fibers insert the same keys
// ------------------------------------------------------------
struct SameKeyResult {
  uint64_t keys = 0;
  uint64_t keys_not_once = 0;  // keys whose inserts did not return true exactly once
  uint64_t duplicated = 0;     // keys stored more than once at the end
  uint64_t missing = 0;
  uint64_t no_win = 0, many_wins = 0;
};

// lockstep: two threads of one fiber meet at a barrier before every key, so that their inserts
// of it overlap as often as possible; otherwise 2 threads x 8 fibers run through the keys.
// How the two clients of same_key_inserts race: freely (2 threads x 8 fibers), in lockstep on two
// threads (each key inserted by both at once: true parallelism, but only when both threads hold a
// core), or in lockstep as two fibers of one thread that yield after every round trip (their
// verbs interleave one by one whatever the machine's load).
enum class Race { kFree, kThreads, kFibers };

SameKeyResult same_key_inserts(const Options& o, uint64_t keys, Race race = Race::kFree) {
  const bool lockstep = race != Race::kFree;
  auto p = pool();
  if (race == Race::kFibers) p->set_yield_per_round_trip(true);
  std::shared_ptr<ShmIndex> idx;
  {
    auto c = client(p, 1000);
    idx = ShmIndex::create(c, o);
  }
  std::vector<std::atomic<uint32_t>> wins(keys);
  std::atomic<uint64_t> arrived{0};
  Scheduler sched(race == Race::kFibers ? SchedulerOptions{1, 2}
                                        : SchedulerOptions{2, lockstep ? 1u : 8u});
  sched.run([&](const WorkerId& w) {
    ShmClient c(shm::Endpoint(p, compute_node(p), w.index));
    auto h = idx->handle(c);
    for (uint64_t k = 0; k < keys; ++k) {
      if (lockstep) {
        arrived.fetch_add(1);
        while (arrived.load() < 2 * (k + 1))
          if (race == Race::kFibers) c.pause();  // let the other fiber arrive
      }
      if (h.insert(k, value_for(k, w.index, 16))) wins[k].fetch_add(1);
      if (!lockstep && k % 4 == 0) c.pause();
    }
  });
  SameKeyResult r;
  r.keys = keys;
  auto c = client(p, 1001);
  auto n = copies(*idx, c);
  for (uint64_t k = 0; k < keys; ++k) {
    if (wins[k].load() != 1) ++r.keys_not_once;
    if (wins[k].load() == 0) ++r.no_win;
    if (wins[k].load() > 1) ++r.many_wins;
    if (n[k] > 1) ++r.duplicated;
    if (n[k] == 0) ++r.missing;
  }
  return r;
}

TEST(RaceConcurrency, SameKeyInsertsSucceedOnceWithoutDuplicates) {
  Options o;
  o.value_size = 16;
  o.groups_per_subtable = 32;
  o.initial_global_depth = 1;  // resizes happen during the races too
  SameKeyResult r = same_key_inserts(o, 3000 * scale());
  EXPECT_EQ(r.keys_not_once, 0u);
  EXPECT_EQ(r.duplicated, 0u);
  EXPECT_EQ(r.missing, 0u);
}

TEST(RaceConcurrency, SameKeyInsertsWithoutSameSlotChoiceStillResolve) {
  // The paper's own scheme: clients pick slots independently and the re-read resolves
  // duplicates by the agreement (minimal bucket, minimal slot survives).
  Options o;
  o.value_size = 16;
  o.groups_per_subtable = 256;
  o.same_slot_for_same_key = false;
  SameKeyResult r = same_key_inserts(o, 3000 * scale(), Race::kThreads);
  EXPECT_EQ(r.duplicated, 0u);
  EXPECT_EQ(r.missing, 0u);
  // Exactly one insert of each key succeeds even when the slots differ: a claim is tentative
  // (invisible) until its re-read shows no other copy, so a late claim in a lower slot can no
  // longer displace a copy whose insert already returned (the paper's agreement alone could).
  std::printf("no insert succeeded: %llu, several succeeded: %llu of %llu keys\n",
              static_cast<unsigned long long>(r.no_win),
              static_cast<unsigned long long>(r.many_wins),
              static_cast<unsigned long long>(r.keys));
  EXPECT_EQ(r.many_wins, 0u);
  EXPECT_EQ(r.no_win, 0u);
}

#ifdef DMRT_FAULT_INJECTION
// --- 6b. fault switch: no duplicate resolution
// -------------------------------------------------------
TEST(RaceFaults, SkipDuplicateResolutionShowsDuplicates) {
  Options o;
  o.value_size = 16;
  o.groups_per_subtable = 256;
  o.same_slot_for_same_key = false;  // let racing inserts pick different slots
  o.faults.skip_duplicate_resolution = true;
  // Fibers: two threads in lockstep only race while both hold a core, which a loaded 2-core
  // machine does not grant (the fault then showed nothing in 12 s).
  SameKeyResult r = same_key_inserts(o, 3000 * scale(), Race::kFibers);
  std::printf("with the fault: %llu keys not inserted exactly once, %llu duplicated\n",
              static_cast<unsigned long long>(r.keys_not_once),
              static_cast<unsigned long long>(r.duplicated));
  EXPECT_GT(r.keys_not_once + r.duplicated, 0u);
}
#endif

}  // namespace
}  // namespace dmrt::race
