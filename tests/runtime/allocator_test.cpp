#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "test_cluster.h"

namespace dmrt {
namespace {

using testing::make_client;

TEST(Allocator, BlocksAreAlignedDisjointAndInsideTheHeap) {
  auto pool = testing::small_pool(2, 1);
  auto c = make_client(pool, 0, ClientOptions{{uint64_t{1} << 16, 256}});
  std::vector<std::pair<GlobalAddress, uint64_t>> blocks;
  for (int i = 0; i < 5000; ++i) {
    uint64_t size = 8 + (i * 37) % 700;
    uint64_t align = i % 3 == 0 ? 64 : 8;
    GlobalAddress a = c.alloc(size, align);
    EXPECT_EQ(a.offset() % align, 0u);
    EXPECT_GE(a.offset(), layout::heap_start(pool->config().mailbox));
    EXPECT_EQ(pool->region(a.node()).role, NodeRole::kMemory);
    blocks.push_back({a, size});
  }
  std::sort(blocks.begin(), blocks.end());
  for (size_t i = 1; i < blocks.size(); ++i) {
    if (blocks[i].first.node() != blocks[i - 1].first.node()) continue;
    ASSERT_GE(blocks[i].first.offset(), blocks[i - 1].first.offset() + blocks[i - 1].second);
  }
}

TEST(Allocator, ExhaustionIsAClearErrorAndKeepsData) {
  auto pool = shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{4} << 20, 4 << 20));
  auto c = make_client(pool, 0, ClientOptions{{uint64_t{1} << 18, 256}});
  GlobalAddress first = c.alloc(64);
  uint64_t marker = 0xfeedface;
  c.write(first, &marker, 8);
  std::set<uint64_t> offsets;
  try {
    for (;;) {
      GlobalAddress a = c.alloc(4096);
      ASSERT_TRUE(offsets.insert(a.offset()).second) << "allocated twice";
      ASSERT_LE(a.offset() + 4096, pool->region(0).bytes);
    }
  } catch (const PoolExhausted& e) {
    EXPECT_NE(std::string(e.what()).find("memory pool exhausted"), std::string::npos);
  }
  // Most of the heap was usable: only chunk tails smaller than a block are lost.
  uint64_t heap = pool->region(0).bytes - layout::heap_start(pool->config().mailbox);
  EXPECT_GE(offsets.size() * 4096, heap * 9 / 10);
  EXPECT_EQ(c.read_value<uint64_t>(first), marker);
  EXPECT_THROW(c.alloc(64), PoolExhausted);  // stays exhausted, no wrap-around
  EXPECT_THROW(c.alloc_on(0, 64), PoolExhausted);
}

TEST(Allocator, FreedBlocksAreReusedOnlyAfterTheDelay) {
  auto pool = testing::small_pool();
  auto c = make_client(pool, 0, ClientOptions{{uint64_t{1} << 16, 4}});
  std::vector<GlobalAddress> freed;
  for (int i = 0; i < 5; ++i) freed.push_back(c.alloc(128));
  for (auto a : freed) c.free(a, 128);
  GlobalAddress next = c.alloc(128);
  EXPECT_EQ(next, freed[0]);  // 5 > delay 4: the oldest comes back first
  GlobalAddress fresh = c.alloc(128);
  EXPECT_TRUE(std::find(freed.begin(), freed.end(), fresh) == freed.end());
}

}  // namespace
}  // namespace dmrt
