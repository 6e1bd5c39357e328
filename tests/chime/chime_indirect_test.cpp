// CHIME-Indirect (options.h `indirect`, §4.5): entries point to out-of-leaf KV blocks. Round
// trips and bytes per operation against inline values on sim, and std::map differentials with
// values of every length up to value_size on sim and shm.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "../common/varlen_values.h"
#include "../runtime/test_cluster.h"
#include "../sherman/kv_checks.h"
#include "../sim/small_cluster.h"
#include "dmrt/indexes/chime/chime.h"
#include "dmrt/indexes/common/kv_block.h"
#include "sim_warm.h"

namespace dmrt {
namespace {

using testing::key_of_rank;
using IndirectSimTree = chime::Tree<SimTransport>;

constexpr uint32_t kIndirectValue = 64;

using testing::varlen_value;

// One client on sim, 20,000 keys with 64-byte values, the internal-node cache warm; no
// speculative reads, so that a search reads one neighborhood (fixed bytes).
struct IndirectSim : testing::ChimeSimWarm {
  explicit IndirectSim(bool indirect)
      : ChimeSimWarm(options(indirect), [](Key k) { return varlen_value(k, 0, kIndirectValue); }) {}
  static chime::Options options(bool indirect) {
    chime::Options o;
    o.value_size = kIndirectValue;
    o.indirect = indirect;
    o.speculative_read = false;
    return o;
  }
};

// Search: inline 1 round trip, a neighborhood of 8 entries of 3 + 8 + 64 B and a 10 B replica
// (610 B, + line versions); indirect 2: the neighborhood of 19 B entries (162 B + 2-3 line
// versions: 164-165 B), then the 72 B block (8 B header + 64 B value). Update: 3 round trips
// either way ([masked CAS (+ block WRITE)] ; [READ neighborhood] ; [WRITE entry + unlock]);
// written: the entry, the lock word, the masked CAS's 8 B, and indirect the block.
TEST(ChimeIndirect, OneMoreRoundTripPerSearchAndBytesAsComputed) {
  const uint32_t block = kvblock::block_bytes(kIndirectValue);
  ASSERT_EQ(block, 72u);
  IndirectSim in(false), ind(true);
  const chime::Geometry& g = ind.t->geometry();
  ASSERT_EQ(g.entry_bytes(), 19u);  // the value slot holds the pointer word
  ASSERT_EQ(in.t->geometry().entry_bytes(), 75u);
  const size_t q = 2000;
  std::set<uint64_t> in_bytes, ind_bytes;
  std::string v;
  for (size_t i = 0; i < q; ++i) {
    Key k = key_of_rank(i * 7 % IndirectSim::n);
    auto a = in.measure([&] { ASSERT_TRUE(in.h->search(k, v)); });
    EXPECT_EQ(v, varlen_value(k, 0, kIndirectValue));
    auto b = ind.measure([&] { ASSERT_TRUE(ind.h->search(k, v)); });
    EXPECT_EQ(v, varlen_value(k, 0, kIndirectValue));
    ASSERT_EQ(a.round_trips, 1u);
    ASSERT_EQ(b.round_trips, 2u);                // one more: the block
    if (g.home(k) + g.h() > g.span()) continue;  // wrapping neighborhoods: two segments
    in_bytes.insert(a.bytes_read);
    ind_bytes.insert(b.bytes_read);
  }
  EXPECT_EQ(ind_bytes, (std::set<uint64_t>{164 + block, 165 + block}));
  std::printf("chime indirect: search bytes inline %llu..%llu, indirect %llu..%llu\n",
              (unsigned long long)*in_bytes.begin(), (unsigned long long)*in_bytes.rbegin(),
              (unsigned long long)*ind_bytes.begin(), (unsigned long long)*ind_bytes.rbegin());
  // 8 x 75 + 10 = 610 B and the 9 or 10 line versions among them.
  EXPECT_EQ(in_bytes, (std::set<uint64_t>{619, 620}));

  // Updates out of place: a new block per update, the same round trips as inline. A chunk claim
  // of the allocator (an FAA per MiB of blocks, dmrt/runtime/allocator.h) adds one round trip to at
  // most one of these updates (2,000 x 72 B < 1 MiB).
  size_t claims = 0;
  std::set<uint64_t> written;
  for (size_t i = 0; i < q; ++i) {
    Key k = key_of_rank(i * 7 % IndirectSim::n);
    auto a = in.measure([&] { ASSERT_TRUE(in.h->update(k, varlen_value(k, 1, 64))); });
    auto b = ind.measure([&] { ASSERT_TRUE(ind.h->update(k, varlen_value(k, 1, 64))); });
    ASSERT_EQ(a.round_trips, 3u);
    if (b.round_trips == 4u) {
      ++claims;
      continue;
    }
    ASSERT_EQ(b.round_trips, 3u);
    written.insert(b.bytes_written);
  }
  EXPECT_LE(claims, 1u);
  // The entry (19 or 20 B), the unlock WRITE (8), the masked CAS (8), the block (72).
  EXPECT_EQ(written, (std::set<uint64_t>{19 + 16 + block, 20 + 16 + block}));
  for (size_t i = 0; i < q; i += 97) {  // the new values, from the new blocks
    Key k = key_of_rank(i * 7 % IndirectSim::n);
    ASSERT_TRUE(ind.h->search(k, v));
    EXPECT_EQ(v, varlen_value(k, 1, 64));
  }

  // Inserts: the block goes in the lock's round trip, so an insert costs what an inline one
  // does (both trees have the same shape: splits depend on homes, not on entry sizes), and a
  // scan one more round trip, its rows' blocks read together.
  uint64_t in_rt = 0, ind_rt = 0;
  for (size_t i = IndirectSim::n; i < IndirectSim::n + q; ++i) {
    Key k = key_of_rank(i);
    in_rt += in.measure([&] { ASSERT_TRUE(in.h->insert(k, varlen_value(k, 0, 64))); }).round_trips;
    ind_rt +=
        ind.measure([&] { ASSERT_TRUE(ind.h->insert(k, varlen_value(k, 0, 64))); }).round_trips;
  }
  EXPECT_LE(ind_rt, in_rt + 1);  // a chunk claim more or less on either side
  EXPECT_LE(in_rt, ind_rt + 1);
  std::printf("chime indirect: insert %.3f RT (inline %.3f)\n", double(ind_rt) / q,
              double(in_rt) / q);
  std::vector<std::pair<Key, std::string>> rin, rind;
  for (size_t i = 0; i < 200; ++i) {
    Key from = key_of_rank(i * 31 % IndirectSim::n);
    auto a = in.measure([&] { in.h->scan(from, 50, rin); });
    auto b = ind.measure([&] { ind.h->scan(from, 50, rind); });
    ASSERT_EQ(rin, rind);
    EXPECT_EQ(b.round_trips, a.round_trips + (rind.empty() ? 0 : 1));
  }
}

template <class H>
void indirect_differential(H& h, size_t ops, size_t keys, uint32_t value_size, uint32_t seed) {
  std::map<Key, std::string> model;
  testing::varlen_differential(h, model, ops, keys, value_size, seed);
}

chime::Options small_indirect(uint32_t value_size) {
  chime::Options o;
  o.span = 16;
  o.neighborhood = 4;
  o.internal_span = 6;
  o.hotspot_bytes = 1 << 16;
  o.value_size = value_size;
  o.indirect = true;
  return o;
}

TEST(ChimeIndirect, DifferentialOnSimWithVersions) {
  sim::Cluster cluster{sim::small_test_cluster(1, 1)};
  sim::SimClient c = sim::untimed_setup_client(cluster);
  auto t = IndirectSimTree::create(c, small_indirect(40));
  ASSERT_EQ(t->sync(), chime::Sync::kVersions);
  auto h = t->handle(c);
  indirect_differential(h, 20000, 2500, 40, 5);
  EXPECT_GT(t->stats()["height"], 2);
}

TEST(ChimeIndirect, DifferentialOnShmWithChecksumsAndByteKeyTree) {
  auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
  auto c = testing::make_client(pool, 0);
  auto t = chime::Tree<ShmTransport>::create(c, small_indirect(200));
  auto h = t->handle(c);
  indirect_differential(h, 20000, 2500, 200, 6);
  // Byte keys (key_size 16): the key stays in the entry, the value goes to the block; the
  // integer overloads run as 8-byte keys.
  chime::Options o = small_indirect(24);
  o.key_size = 16;
  o.root_slot = chime::Options{}.root_slot + 1;
  auto tb = chime::Tree<ShmTransport>::create(c, o);
  auto hb = tb->handle(c);
  indirect_differential(hb, 10000, 1500, 24, 7);
  // Every technique off: whole-leaf reads, the bitmap after locking.
  chime::Options off = small_indirect(16);
  off.hopscotch_leaf = off.vacancy_piggyback = off.metadata_replication = false;
  off.speculative_read = false;
  off.root_slot = chime::Options{}.root_slot + 2;
  auto to = chime::Tree<ShmTransport>::create(c, off);
  auto ho = to->handle(c);
  indirect_differential(ho, 10000, 1500, 16, 8);
}

}  // namespace
}  // namespace dmrt
