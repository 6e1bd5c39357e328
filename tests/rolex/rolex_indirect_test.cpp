// ROLEX-Indirect (options.h `indirect`; CHIME's Fig. 13): leaf pairs point to out-of-leaf KV
// blocks. Round trips and bytes per operation against inline values, and std::map differentials
// with values of every length up to value_size (bulk loaded, and from empty with retrainings).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "../common/varlen_values.h"
#include "../sherman/kv_checks.h"
#include "dmrt/indexes/common/kv_block.h"
#include "rolex_test_util.h"

namespace dmrt {
namespace {

using testing::RIndex;

using testing::varlen_value;

struct RolexOpCost {
  uint64_t rt = 0, rd = 0, wr = 0;
};
template <class F>
RolexOpCost rolex_cost(testing::ShmClient& c, F&& f) {
  VerbCounters before = c.counters().total;
  f();
  VerbCounters d = c.counters().total - before;
  return {d.round_trips, d.bytes_read, d.bytes_written};
}

// Bulk-loaded, half-full leaves, one client, 8-byte values (so both layouts have the same
// leaves): a search costs one more round trip and the block's 16 bytes (8 B header + 8 B value);
// an insert, update or delete the same 4 round trips (search ; lock + chain READ ; WRITE leaf +
// unlock), the block's WRITE riding in the lock's batch.
TEST(RolexIndirect, OneMoreRoundTripPerSearchAndBytesAsComputed) {
  std::vector<Key> keys;
  for (Key k = 1; k <= 16000; ++k) keys.push_back(k * 1000);
  RolexOpCost s[2], ins[2], upd[2], del[2];
  const uint64_t n = 500;
  for (bool indirect : {false, true}) {
    auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
    auto c = testing::make_client(pool, 0);
    rolex::Options o;
    o.fill = 0.5;
    o.indirect = indirect;
    auto idx = RIndex::create(c, o, keys);
    auto h = idx->handle(c);
    std::string out;
    for (Key k : keys) h.search(k, out);  // warm
    // The allocator's chunk claim (an FAA, dmrt/runtime/allocator.h) before the measured blocks.
    ASSERT_TRUE(h.insert(7, "w"));
    ASSERT_TRUE(h.remove(7));
    for (uint64_t i = 0; i < n; ++i) {
      Key k = keys[i * 31] + 1;
      auto add = [](RolexOpCost& a, RolexOpCost b) { a.rt += b.rt, a.rd += b.rd, a.wr += b.wr; };
      add(s[indirect], rolex_cost(c, [&] { ASSERT_TRUE(h.search(keys[i * 31], out)); }));
      Key lk = keys[i * 31];
      EXPECT_EQ(out, std::string(reinterpret_cast<const char*>(&lk), 8));  // the bulk load's
      add(ins[indirect], rolex_cost(c, [&] { ASSERT_TRUE(h.insert(k, varlen_value(k, 0, 8))); }));
      add(upd[indirect], rolex_cost(c, [&] { ASSERT_TRUE(h.update(k, varlen_value(k, 1, 8))); }));
      ASSERT_TRUE(h.search(k, out));
      EXPECT_EQ(out, varlen_value(k, 1, 8));
      add(del[indirect], rolex_cost(c, [&] { ASSERT_TRUE(h.remove(k)); }));
    }
  }
  const uint64_t block = kvblock::block_bytes(8);
  EXPECT_EQ(s[0].rt, n);
  EXPECT_EQ(s[1].rt, 2 * n);
  EXPECT_EQ(s[1].rd, s[0].rd + n * block);
  for (auto* op : {ins, upd, del}) EXPECT_EQ(op[1].rt, op[0].rt);
  EXPECT_EQ(ins[0].rt, 4 * n);
  // Inserts and updates write their block; reads are the same (the pre-lock search is a presence
  // check: it reads no block); deletes cost the same.
  EXPECT_EQ(ins[1].wr, ins[0].wr + n * block);
  EXPECT_EQ(upd[1].wr, upd[0].wr + n * block);
  EXPECT_EQ(ins[1].rd, ins[0].rd);
  EXPECT_EQ(upd[1].rd, upd[0].rd);
  EXPECT_EQ(del[1].rd, del[0].rd);
  EXPECT_EQ(del[1].wr, del[0].wr);
  std::printf(
      "rolex indirect: search %.2f RT %.1f B (inline %.2f RT %.1f B); update %.2f RT "
      "%.1f B written (inline %.1f)\n",
      double(s[1].rt) / n, double(s[1].rd) / n, double(s[0].rt) / n, double(s[0].rd) / n,
      double(upd[1].rt) / n, double(upd[1].wr) / n, double(upd[0].wr) / n);

  // A scan reads its rows' blocks in one more round trip.
  for (bool indirect : {false, true}) {
    auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
    auto c = testing::make_client(pool, 0);
    rolex::Options o;
    o.indirect = indirect;
    auto idx = RIndex::create(c, o, keys);
    auto h = idx->handle(c);
    std::vector<std::pair<Key, std::string>> rows;
    h.scan(keys[100], 50, rows);  // warm
    auto d = rolex_cost(c, [&] { h.scan(keys[100], 50, rows); });
    ASSERT_EQ(rows.size(), 50u);
    EXPECT_EQ(rows[7].second, std::string(reinterpret_cast<const char*>(&keys[107]), 8));
    s[indirect] = d;
  }
  EXPECT_EQ(s[1].rt, s[0].rt + 1);
  EXPECT_EQ(s[1].rd, s[0].rd + 50 * block);
}

TEST(RolexIndirect, DifferentialFromEmptyWithRetrainings) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto c = testing::make_client(pool, 0);
  rolex::Options o = testing::small_retraining_options(4);
  o.retrain_on_compute = true;  // no service here: the inserting client retrains (moves pointers)
  o.value_size = 40;
  o.indirect = true;
  auto idx = RIndex::create(c, o);
  auto h = idx->handle(c);
  std::map<Key, std::string> model;
  testing::varlen_differential(h, model, 30000, 3000, 40, 12);
  auto s = idx->stats(c);
  EXPECT_GT(s["synonym_leaves"], 0);
  EXPECT_GT(s["retrainings"], 0);
}

TEST(RolexIndirect, DifferentialBulkLoaded) {
  auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  auto c = testing::make_client(pool, 0);
  std::vector<Key> keys;
  for (size_t r = 0; r < 3000; r += 2) keys.push_back(testing::key_of_rank(r));
  std::sort(keys.begin(), keys.end());
  rolex::Options o;
  o.value_size = 100;
  o.indirect = true;
  o.compute_retrain_fallback = true;
  auto value_of = [](Key k) { return varlen_value(k, 7, 1 + k % 100); };
  auto idx = RIndex::create(c, o, keys, value_of);
  auto h = idx->handle(c);
  std::map<Key, std::string> model;
  for (Key k : keys) model[k] = value_of(k) + std::string(100 - value_of(k).size(), '\0');
  testing::varlen_differential(h, model, 20000, 3000, 100, 13);
}

}  // namespace
}  // namespace dmrt
