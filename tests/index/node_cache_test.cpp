// The compute-side node cache (dmrt/indexes/common/node_cache.h): lowest covering level,
// replacement by low fence, invalidation of exactly the copy a search used, CLOCK eviction within
// the budget.
#include "dmrt/indexes/common/node_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>

#include "dmrt/indexes/common/btree_keys.h"

namespace dmrt::btree {
namespace {

template <class K>
BasicInternalNode<K> node(unsigned level, typename K::Key lo, typename K::Key hi, uint64_t addr,
                          uint8_t nv = 0, bool hi_inf = false) {
  BasicInternalNode<K> n;
  n.level = static_cast<uint8_t>(level);
  n.lo = lo;
  n.hi = hi;
  n.hi_inf = hi_inf;
  n.addr = GlobalAddress(0, addr);
  n.nv = nv;
  n.keys = {lo};
  n.children = {GlobalAddress(0, addr + 1), GlobalAddress(0, addr + 2)};
  return n;
}

TEST(NodeCache, FindsTheLowestLevelThatCovers) {
  NodeCache c(1 << 20);
  c.put(node<IntKeys>(2, 0, 0, 0x1000, 0, true));  // the root: everything
  for (uint64_t i = 0; i < 8; ++i) c.put(node<IntKeys>(1, i * 100, (i + 1) * 100, 0x2000 + i * 64));
  EXPECT_EQ(c.entries(), 9u);
  for (uint64_t k : {0ull, 99ull, 100ull, 450ull, 799ull}) {
    auto n = c.find(k);
    ASSERT_TRUE(n) << k;
    EXPECT_EQ(n->level, 1) << k;
    EXPECT_EQ(n->lo, k / 100 * 100) << k;
  }
  // Beyond the level-1 nodes only the root covers; asked from level 2, the root answers.
  EXPECT_EQ(c.find(800)->level, 2);
  EXPECT_EQ(c.find(5, 2)->level, 2);
  NodeCache empty(1 << 20);
  EXPECT_FALSE(empty.find(5));
}

TEST(NodeCache, ReplacesByLowFenceAndInvalidatesOnlyTheCopyUsed) {
  NodeCache c(1 << 20);
  c.put(node<IntKeys>(1, 100, 200, 0x3000, 1));
  auto old = c.find(150);
  ASSERT_TRUE(old);
  c.put(node<IntKeys>(1, 100, 150, 0x3000, 2));  // a newer copy after a split: same low fence
  EXPECT_EQ(c.entries(), 1u);
  EXPECT_EQ(c.find(120)->nv, 2);
  EXPECT_FALSE(c.find(170));  // the new copy no longer covers it
  c.invalidate(old);          // stale copy: the newer one stays
  EXPECT_EQ(c.invalidations(), 0u);
  ASSERT_TRUE(c.find(120));
  c.invalidate(c.find(120));
  EXPECT_EQ(c.invalidations(), 1u);
  EXPECT_FALSE(c.find(120));
  EXPECT_EQ(c.entries(), 0u);
  EXPECT_EQ(c.used_bytes(), 0u);
}

// Many puts in random fence order under a small budget: the cache stays within it, every entry
// it still answers with is the last put of that fence, and evicted ones are simply absent.
TEST(NodeCache, EvictsWithinTheBudgetAndKeepsOrder) {
  const uint64_t cost = node<IntKeys>(1, 0, 1, 0).cache_cost();
  NodeCache c(cost * 64);
  std::map<uint64_t, uint8_t> last;  // lo -> nv of the last put
  uint64_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t lo = (x >> 33) % 512 * 10;
    const auto nv = static_cast<uint8_t>(i);
    c.put(node<IntKeys>(1, lo, lo + 10, 0x10000 + lo * 64, nv));
    last[lo] = nv;
    ASSERT_LE(c.used_bytes(), c.budget());
    if (i % 7 == 0) c.find(lo + 3);  // referenced: a second chance
  }
  EXPECT_GT(c.evictions(), 0u);
  EXPECT_LE(c.entries(), 64u);
  size_t found = 0;
  for (const auto& [lo, nv] : last) {
    if (auto n = c.find(lo + 5)) {
      ++found;
      EXPECT_EQ(n->lo, lo);
      EXPECT_EQ(n->nv, nv);
    }
  }
  EXPECT_EQ(found, c.entries());
}

TEST(NodeCache, ByteKeysOrderByTheirBytes) {
  BasicNodeCache<ByteKeys> c(1 << 20, 4);
  c.put(node<ByteKeys>(1, "", "user1", 0x4000));
  c.put(node<ByteKeys>(1, "user1", "user3", 0x5000));
  c.put(node<ByteKeys>(1, "user3", "", 0x6000, 0, true));
  EXPECT_EQ(c.find("user0")->addr, GlobalAddress(0, 0x4000));
  EXPECT_EQ(c.find("user1")->addr, GlobalAddress(0, 0x5000));
  EXPECT_EQ(c.find("user2zzzz")->addr, GlobalAddress(0, 0x5000));
  EXPECT_EQ(c.find("user3")->addr, GlobalAddress(0, 0x6000));
  EXPECT_EQ(c.find("zzz")->addr, GlobalAddress(0, 0x6000));
  c.invalidate(c.find("user2"));
  EXPECT_EQ(c.find("user2"), nullptr);
  EXPECT_EQ(c.entries(), 2u);
}

}  // namespace
}  // namespace dmrt::btree
