// RACE with byte-string keys under threads x fibers (shm): splits and same-key insert races.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "dmrt/runtime/scheduler.h"
#include "race_test_util.h"

namespace dmrt::race {
namespace {

using namespace testing;

// RACE_SCALE multiplies the keys (the race_stress test sets 4).
uint64_t bytes_scale() {
  const char* s = std::getenv("RACE_SCALE");
  return s ? static_cast<uint64_t>(std::max(1, std::atoi(s))) : 1;
}

// --- concurrency (shm): threads x fibers over byte keys, with splits -----------------------------
TEST(RaceBytesConcurrency, ByteKeysUnderSplitsAndSameKeyRaces) {
  auto p = pool();
  Options o;
  o.key_size = 64;
  o.value_size = 24;
  o.groups_per_subtable = 16;  // many splits
  o.initial_global_depth = 0;
  std::shared_ptr<ShmIndex> idx;
  {
    auto c = client(p, 1000);
    idx = ShmIndex::create(c, o);
  }
  constexpr unsigned kThreads = 2, kFibers = 4, kWorkers = kThreads * kFibers;
  const uint64_t kOwn = 1500 * bytes_scale(), kShared = 400;
  // Own keys: "w<worker>:<i>" then padding of 0x00/0xff to a length that varies with i.
  auto own_key = [](unsigned w, uint64_t i) {
    std::string k = "w" + std::to_string(w) + ":" + std::to_string(i);
    size_t len = std::min<size_t>(64, k.size() + i % 50);
    while (k.size() < len) k.push_back(k.size() % 2 ? '\0' : '\xff');
    return k;
  };
  // Shared keys every worker inserts: 48-byte user keys differing in their last digits.
  auto shared_key = [](uint64_t j) { return user_key(j, 48); };
  struct Model {
    std::map<std::string, std::pair<uint64_t, uint64_t>> version;  // key -> (i, latest version)
    std::vector<std::string> removed;
  };
  std::vector<Model> models(kWorkers);
  std::vector<std::atomic<uint32_t>> wins(kShared);
  Scheduler sched({kThreads, kFibers});
  sched.run([&](const WorkerId& w) {
    ShmClient c(shm::Endpoint(p, compute_node(p), w.index));
    auto h = idx->handle(c);
    std::mt19937_64 rng(w.index);
    Model& m = models[w.index];
    std::string out;
    for (uint64_t i = 0; i < kOwn; ++i) {
      std::string k = own_key(w.index, i);
      ASSERT_TRUE(h.insert(k, value_for(i, 0, 24))) << w.index << ":" << i;
      m.version[k] = {i, 0};
      uint64_t r = rng() % 8;
      if (r < 2) {
        uint64_t j = rng() % (i + 1);
        auto it = m.version.find(own_key(w.index, j));
        if (it != m.version.end()) {
          uint64_t ver = ++it->second.second;
          ASSERT_TRUE(h.update(it->first, value_for(j, ver, 24)));
          ASSERT_TRUE(h.search(it->first, out));
          ASSERT_EQ(out, value_for(j, ver, 24));
        }
      } else if (r == 2) {
        std::string victim = own_key(w.index, rng() % (i + 1));
        if (m.version.erase(victim)) {
          ASSERT_TRUE(h.remove(victim));
          m.removed.push_back(victim);
        }
      }
      if (i % 4 == 0) {
        uint64_t j = (i / 4 + w.index * 7) % kShared;
        if (h.insert(shared_key(j), value_for(j, w.index, 24))) wins[j].fetch_add(1);
      }
      if (i % 8 == 0) c.pause();
    }
  });
  auto c = client(p, 1001);
  auto h = idx->handle(c);
  auto copies = byte_copies(*idx, c);
  std::string out;
  size_t expected = 0;
  for (unsigned w = 0; w < kWorkers; ++w) {
    for (auto& [k, v] : models[w].version) {
      ++expected;
      ASSERT_EQ(copies[k], 1) << "own key of worker " << w;
      ASSERT_TRUE(h.search(k, out));
      ASSERT_EQ(out, value_for(v.first, v.second, 24));
    }
    for (const std::string& k : models[w].removed) {
      ASSERT_EQ(copies.count(k), 0u);
      ASSERT_FALSE(h.search(k, out));
    }
  }
  for (uint64_t j = 0; j < kShared; ++j) {
    EXPECT_EQ(wins[j].load(), 1u) << "shared key " << j << " inserted " << wins[j].load() << "x";
    EXPECT_EQ(copies[shared_key(j)], 1) << "shared key " << j;
    ASSERT_TRUE(h.search(shared_key(j), out));
    EXPECT_TRUE(value_names_key(out, j)) << out;
  }
  EXPECT_EQ(copies.size(), expected + kShared);
  auto s = idx->stats(c);
  EXPECT_GT(s.at("resizes"), 10.0);
}

}  // namespace
}  // namespace dmrt::race
