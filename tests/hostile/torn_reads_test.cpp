// The shm transport's torn-read mode (shm::Pool::set_torn_reads), which the fault proofs rely on:
// a READ racing a writer fiber sees old words and new words, never a torn word, split at varying
// boundaries in either order; counts are those of the whole READ. And its round-trip jitter
// (set_round_trip_jitter): uneven waits before round trips.
#include <gtest/gtest.h>

#include <array>
#include <boost/fiber/fiber.hpp>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "tests/runtime/test_cluster.h"

namespace dmrt {
namespace {

constexpr size_t kWords = 8;
using Words = std::array<uint64_t, kWords>;

Words generation(uint64_t g) {
  Words w;
  for (size_t i = 0; i < kWords; ++i) w[i] = g << 8 | i;
  return w;
}

TEST(TornReads, ReaderSeesOldAndNewWordsInEitherOrderNeverATornWord) {
  auto pool = testing::small_pool();
  pool->set_torn_reads(true);
  auto reader = testing::make_client(pool, 1);
  auto writer = testing::make_client(pool, 2);
  GlobalAddress a = reader.alloc(kWords * 8);
  uint64_t gen = 0;
  Words w = generation(gen);
  writer.write(a, w.data(), kWords * 8);

  // The writer fiber writes the next generation whenever it runs: inside the reader's READ
  // exactly when that READ yields between its pieces.
  bool done = false;
  boost::fibers::fiber wf([&] {
    while (!done) {
      Words n = generation(++gen);
      writer.write(a, n.data(), kWords * 8);
      boost::this_fiber::yield();
    }
  });
  std::set<std::pair<size_t, bool>> cuts;  // (first word of the upper piece, lower piece first)
  constexpr int kReads = 400;
  const VerbCounters before = reader.counters().total;
  for (int r = 0; r < kReads; ++r) {
    Words got{};
    reader.read(a, got.data(), kWords * 8);
    // Every word whole, and the image is two runs: one generation up to a cut, another after it.
    uint64_t g0 = got[0] >> 8, g1 = got[kWords - 1] >> 8;
    size_t cut = kWords;
    for (size_t i = 0; i < kWords; ++i) {
      ASSERT_EQ(got[i] & 0xff, i) << "torn word " << i;
      if ((got[i] >> 8) != g0 && cut == kWords) cut = i;
      if (cut != kWords) {
        ASSERT_EQ(got[i] >> 8, g1) << "more than two pieces";
      }
    }
    ASSERT_NE(cut, kWords) << "read " << r << " was not torn";
    ASSERT_EQ(g0 == g1 + 1 || g1 == g0 + 1, true) << g0 << " / " << g1;
    cuts.emplace(cut, g0 < g1);
  }
  done = true;
  wf.join();
  // Both orders, and cuts at every word boundary, occur.
  EXPECT_EQ(cuts.size(), 2 * (kWords - 1));

  // Verb, round-trip and byte counts are those of whole READs.
  const VerbCounters& t = reader.counters().total;
  constexpr size_t kRead = static_cast<size_t>(VerbKind::kRead);
  EXPECT_EQ(t.verbs[kRead] - before.verbs[kRead], uint64_t{kReads});
  EXPECT_EQ(t.round_trips - before.round_trips, uint64_t{kReads});
  EXPECT_EQ(t.bytes_read - before.bytes_read, uint64_t{kReads} * kWords * 8);
}

TEST(TornReads, OnlyReadsSpanningTwoWordsYield) {
  // Without the per-round-trip yield, the only yield is the one between a torn READ's pieces.
  auto pool =
      shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{64} << 20, uint64_t{8} << 20));
  pool->set_torn_reads(true);
  auto c = testing::make_client(pool, 1);
  GlobalAddress a = c.alloc(64);
  uint64_t v[2] = {0x0123456789abcdefull, 42};
  c.write(a, v, 16);
  int runs = 0;
  boost::fibers::fiber other([&] {
    for (int i = 0; i < 2; ++i) {
      ++runs;
      boost::this_fiber::yield();
    }
  });
  uint32_t part = 0;
  c.read(a + 2, &part, 4);  // inside one word: performed whole, no yield
  EXPECT_EQ(part, 0x456789abu);
  EXPECT_EQ(runs, 0);
  uint64_t got[2] = {};
  c.read(a, got, 16);  // two words: two pieces, the other fiber runs between them
  EXPECT_EQ(got[0], v[0]);
  EXPECT_EQ(got[1], v[1]);
  EXPECT_EQ(runs, 1);
  other.join();
}

TEST(TornReads, OffByDefault) {
  auto pool = testing::small_pool();
  EXPECT_EQ(pool->round_trip_hooks() & shm::Pool::kTornReads, 0);
  pool->set_torn_reads(true);
  EXPECT_NE(pool->round_trip_hooks() & shm::Pool::kTornReads, 0);
  EXPECT_TRUE(pool->yield_per_round_trip());
  pool->set_torn_reads(false);
  EXPECT_EQ(pool->round_trip_hooks(), shm::Pool::kYieldPerRoundTrip);
}

// Before each round trip a client yields 0..max times: the other fiber of the thread runs a
// varying number of turns (every count in range, none above it) between two round trips, and
// the same schedule gives the same counts.
std::vector<int> turns_between_round_trips(unsigned max) {
  auto pool =
      shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{64} << 20, uint64_t{8} << 20));
  pool->set_round_trip_jitter(max);
  auto c = testing::make_client(pool, 1);
  GlobalAddress a = c.alloc(64);
  int runs = 0;
  bool done = false;
  boost::fibers::fiber other([&] {
    while (!done) {
      ++runs;
      boost::this_fiber::yield();
    }
  });
  std::vector<int> turns;
  for (int i = 0; i < 300; ++i) {
    const int before = runs;
    c.faa(a, 1);
    turns.push_back(runs - before);
  }
  done = true;
  other.join();
  EXPECT_EQ(c.read_value<uint64_t>(a), 300u);  // the verbs themselves are unchanged
  return turns;
}

TEST(RoundTripJitter, YieldsAnUnevenBoundedNumberOfTimes) {
  std::vector<int> turns = turns_between_round_trips(5);
  std::set<int> seen(turns.begin(), turns.end());
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(turns, turns_between_round_trips(5));
  std::vector<int> none = turns_between_round_trips(0);
  EXPECT_EQ(std::set<int>(none.begin(), none.end()), std::set<int>{0});
  auto pool = testing::small_pool();
  pool->set_round_trip_jitter(3);
  EXPECT_EQ(pool->round_trip_jitter(), 3u);
  EXPECT_NE(pool->round_trip_hooks() & shm::Pool::kJitter, 0);
  pool->set_round_trip_jitter(0);
  EXPECT_EQ(pool->round_trip_hooks(), shm::Pool::kYieldPerRoundTrip);
}

}  // namespace
}  // namespace dmrt
