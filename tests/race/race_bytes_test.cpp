// RACE with byte-string keys (issue 19): semantics against std::map, limits, resizing from the key
// bytes, and the exact cost per operation on sim by key length.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dmrt/runtime/key_bytes.h"
#include "race_test_util.h"
#if DMRT_TRANSPORT_SIM
#include "dmrt/policies/sim/cluster.h"
#endif

namespace dmrt::race {
namespace {

using namespace testing;

static_assert(BytesKvHandle<ShmIndex::Handle>);

// A pool of distinct keys of 1..key_size bytes: random bytes (0x00 and 0xff included), chains of
// keys that are prefixes of each other, and user keys sharing all but their last bytes.
std::vector<std::string> mixed_keys(uint32_t key_size, size_t random_keys, uint64_t seed) {
  std::set<std::string> keys;
  std::mt19937_64 rng(seed);
  std::string chain;
  for (uint32_t len = 1; len <= key_size; len += 1 + len / 4) {
    chain.resize(len, static_cast<char>(len % 3 == 0 ? 0x00 : (len % 3 == 1 ? 0xff : 'p')));
    keys.insert(chain);  // each a proper prefix of the next
  }
  keys.insert(std::string(1, '\0'));
  keys.insert(std::string(2, '\0'));
  keys.insert(std::string(key_size, '\0'));
  keys.insert(std::string(key_size, '\xff'));
  if (key_size >= 24)
    for (uint64_t n = 0; n < 64; ++n) keys.insert(user_key(n, key_size));
  while (keys.size() < random_keys) {
    size_t len = 1 + rng() % key_size;
    std::string k(len, '\0');
    for (char& ch : k) {
      uint64_t r = rng() % 8;
      ch = r == 0 ? '\0' : r == 1 ? '\xff' : static_cast<char>(rng());
    }
    keys.insert(k);
  }
  std::vector<std::string> out(keys.begin(), keys.end());
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

std::string bytes_value(size_t key_no, uint64_t version, size_t len) {
  return value_for(key_no, version, len);
}

// --- semantics ---------------------------------------------------------------------------------
struct BytesCase {
  uint32_t key_size;
  uint32_t value_size;
  uint32_t groups;
  uint32_t initial_depth;
};

class RaceBytesSemantics : public ::testing::TestWithParam<BytesCase> {};

TEST_P(RaceBytesSemantics, MixedKeysMatchStdMap) {
  const BytesCase& bc = GetParam();
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  o.key_size = bc.key_size;
  o.value_size = bc.value_size;
  o.groups_per_subtable = bc.groups;
  o.initial_global_depth = bc.initial_depth;
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  const std::vector<std::string> keys = mixed_keys(bc.key_size, 1200, bc.key_size);
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(7 + bc.key_size);
  std::string out;
  for (int i = 0; i < 6000; ++i) {
    size_t n = rng() % keys.size();
    const std::string& k = keys[n];
    std::string v = bytes_value(n, i, 1 + rng() % bc.value_size);
    switch (rng() % 4) {
      case 0: {
        bool expect = !model.count(k);
        ASSERT_EQ(h.insert(k, v), expect) << "insert #" << n;
        if (expect) model[k] = v;
        break;
      }
      case 1: {
        bool expect = model.count(k) > 0;
        ASSERT_EQ(h.update(k, v), expect) << "update #" << n;
        if (expect) model[k] = v;
        break;
      }
      case 2: {
        bool expect = model.count(k) > 0;
        ASSERT_EQ(h.remove(k), expect) << "remove #" << n;
        model.erase(k);
        break;
      }
      default: {
        bool found = h.search(k, out);
        ASSERT_EQ(found, model.count(k) > 0) << "search #" << n;
        if (found) {
          ASSERT_EQ(out, model[k]);
        }
      }
    }
  }
  for (size_t n = 0; n < keys.size(); ++n) {
    bool found = h.search(keys[n], out);
    ASSERT_EQ(found, model.count(keys[n]) > 0) << "#" << n;
    if (found) {
      EXPECT_EQ(out, model[keys[n]]);
    }
  }
  auto copies = byte_copies(*idx, c);
  EXPECT_EQ(copies.size(), model.size());
  for (auto& [k, cnt] : copies) {
    EXPECT_EQ(cnt, 1) << "a key of " << k.size() << " bytes";
    EXPECT_TRUE(model.count(k)) << "a stored key of " << k.size() << " bytes not in the model";
  }
}

INSTANTIATE_TEST_SUITE_P(Values, RaceBytesSemantics,
                         ::testing::Values(BytesCase{32, 8, 256, 2}, BytesCase{256, 100, 256, 2},
                                           BytesCase{1024, 16, 256, 2},
                                           // Small subtables from one: splits rehash byte keys.
                                           BytesCase{64, 8, 4, 0}));

// --- resizing from the key bytes ---------------------------------------------------------------
TEST(RaceBytesResize, SplitsMoveByteKeysByTheirHash) {
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  o.key_size = 256;
  o.groups_per_subtable = 8;
  o.initial_global_depth = 0;
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  // Keys that differ only in their last bytes, of two lengths, and short ones.
  std::vector<std::string> keys;
  for (uint64_t n = 0; n < 1500; ++n) keys.push_back(user_key(n, n % 2 ? 256 : 40));
  for (uint64_t n = 0; n < 500; ++n) keys.push_back(std::to_string(n));
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(h.insert(keys[i], bytes_value(i, 0, 8)));
  auto s = idx->stats(c);
  EXPECT_GE(s.at("resizes"), 10.0);
  EXPECT_GE(s.at("global_depth"), 4.0);
  EXPECT_EQ(s.at("items"), static_cast<double>(keys.size()));
  // A fresh handle (cold directory cache) finds every key where its hash now leads.
  auto c2 = client(p, 1);
  auto h2 = idx->handle(c2);
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(h2.search(keys[i], out)) << keys[i];
    ASSERT_EQ(out, bytes_value(i, 0, 8));
  }
  auto copies = byte_copies(*idx, c);
  EXPECT_EQ(copies.size(), keys.size());
  for (auto& [k, cnt] : copies) EXPECT_EQ(cnt, 1) << k;
}

// --- limits and the two key modes --------------------------------------------------------------
TEST(RaceBytesLimits, OverlongAndEmptyKeysAreRejected) {
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  o.key_size = 32;
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  const std::string longest(32, 'k'), too_long(33, 'k');
  std::string out;
  EXPECT_THROW(h.insert(too_long, "v"), LimitError);
  EXPECT_THROW(h.search(too_long, out), LimitError);
  EXPECT_THROW(h.update(too_long, "v"), LimitError);
  EXPECT_THROW(h.remove(too_long), LimitError);
  EXPECT_THROW(h.insert(std::string_view(), "v"), LimitError);
  try {
    h.insert(too_long, "v");
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("key_size 32"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(idx->items(c).empty());  // nothing was stored
  ASSERT_TRUE(h.insert(longest, "v"));
  ASSERT_TRUE(h.search(longest, out));
  EXPECT_EQ(out, "v");
  EXPECT_FALSE(h.search(longest.substr(0, 31), out));  // a prefix is another key
  EXPECT_EQ(idx->items(c).size(), 1u);
}

TEST(RaceBytesLimits, IntegerKeysAreTheirBigEndianBytes) {
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  o.key_size = 16;
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  std::string out;
  ASSERT_TRUE(h.insert(Key{0x0102030405060708}, "int"));
  ASSERT_TRUE(h.search(key_bytes(0x0102030405060708), out));
  EXPECT_EQ(out, "int");
  EXPECT_FALSE(h.insert(std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8), "again"));
  ASSERT_TRUE(h.update(key_bytes(0x0102030405060708), "upd"));
  ASSERT_TRUE(h.search(Key{0x0102030405060708}, out));
  EXPECT_EQ(out, "upd");
  auto items = idx->items(c);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].key, 0x0102030405060708u);
  EXPECT_EQ(items[0].key_str, key_bytes(0x0102030405060708));
  EXPECT_TRUE(h.remove(Key{0x0102030405060708}));
  EXPECT_FALSE(h.search(key_bytes(0x0102030405060708), out));
}

TEST(RaceBytesLimits, IntegerIndexTakesOnlyEightByteKeys) {
  auto p = pool();
  auto c = client(p, 0);
  Options o;  // key_size 8: integer keys
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  std::string out;
  EXPECT_THROW(h.insert(std::string("abc"), "v"), LimitError);
  EXPECT_THROW(h.search(std::string(9, 'x'), out), LimitError);
  ASSERT_TRUE(h.insert(key_bytes(77), "seventy"));
  ASSERT_TRUE(h.search(Key{77}, out));
  EXPECT_EQ(out, "seventy");
  auto items = idx->items(c);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].key, 77u);
  EXPECT_EQ(items[0].key_str, key_bytes(77));
}

TEST(RaceBytesLimits, BadKeySizesAndMixedModesAreConfigErrors) {
  auto p = pool();
  auto c = client(p, 0);
  Options o;
  o.key_size = 0;
  EXPECT_THROW(ShmIndex::create(c, o), ConfigError);
  o.key_size = static_cast<uint32_t>(kMaxKeyBytes) + 1;
  EXPECT_THROW(ShmIndex::create(c, o), ConfigError);
  o.key_size = 1024;
  o.value_size = KvBlock::kMaxPayload - 1023;  // one byte too many for one block
  EXPECT_THROW(ShmIndex::create(c, o), ConfigError);
  o.value_size = KvBlock::kMaxPayload - 1024;
  auto idx = ShmIndex::create(c, o);
  auto h = idx->handle(c);
  std::string big_key(1024, 'k'), big_value(o.value_size, 'v'), out;
  ASSERT_TRUE(h.insert(big_key, big_value));
  ASSERT_TRUE(h.search(big_key, out));
  EXPECT_EQ(out, big_value);
  // Byte keys hash differently from integer keys: a key_size 8 client must not attach.
  Options integer = o;
  integer.key_size = 8;
  integer.value_size = 8;
  EXPECT_THROW(ShmIndex::attach(c, integer), ConfigError);
  Options other_size = o;
  other_size.key_size = 64;  // the same byte-key format: only the client's limit differs
  auto attached = ShmIndex::attach(c, other_size);
  auto h2 = attached->handle(c);
  EXPECT_FALSE(h2.search(std::string(64, 'k'), out));
}

#if DMRT_TRANSPORT_SIM
// --- exact cost per operation on sim, by key length ---------------------------------------------
constexpr uint64_t kSimOps = 100;
// Per operation, over kSimOps operations (sums kept as integers, so an exact mean stays exact).
struct OpCost {
  uint64_t rt = 0, rd = 0, wr = 0;
  double round_trips() const { return double(rt) / kSimOps; }
  double bytes_read() const { return double(rd) / kSimOps; }
  double bytes_written() const { return double(wr) / kSimOps; }
};
struct KeyLengthCosts {
  OpCost insert, search, miss, update, remove;
};

// One client on the simulated cluster: `n` inserts, searches (hits), searches of absent keys,
// updates and removes of keys of `key_len` bytes with 8 B values, each averaged over its n ops.
// key_size 8 runs the integer path (Key overloads); otherwise user keys of exactly key_len bytes.
KeyLengthCosts sim_costs(uint32_t key_size, size_t key_len, bool headers_in_view = false) {
  sim::Options so = sim::Options::preset("rdma-cx6");
  so.compute_nodes = 1;
  so.clients_per_node = 1;
  so.memory_bytes = uint64_t{256} << 20;
  sim::Cluster cluster(so);
  sim::SimClient setup(cluster.endpoint(cluster.compute_nodes()[0], 999));
  Options o;
  o.key_size = key_size;
  o.reread_headers_in_view = headers_in_view;
  auto idx = RaceIndex<SimTransport>::create(setup, o);
  KeyLengthCosts out;
  constexpr uint64_t kN = kSimOps;
  cluster.run([&](sim::SimClient& c, const sim::WorkerInfo&) {
    auto h = idx->handle(c);
    auto op = [&](OpCost& cost, auto&& f) {
      VerbCounters before = c.counters().total;
      f();
      VerbCounters d = c.counters().total - before;
      cost.rt += d.round_trips;
      cost.rd += d.bytes_read;
      cost.wr += d.bytes_written;
    };
    auto each = [&](uint64_t first, OpCost& cost, auto&& f) {
      for (uint64_t n = first; n < first + kN; ++n)
        op(cost, [&] {
          if (key_size == 8)
            f(Key{n});
          else
            f(user_key(n, key_len));
        });
    };
    std::string v = "value-08", got;
    ASSERT_TRUE(h.insert(Key{1} << 40, v));  // warms the allocator chunk (its claiming FAA)
    each(0, out.insert, [&](const auto& k) { ASSERT_TRUE(h.insert(k, v)); });
    each(0, out.search, [&](const auto& k) { ASSERT_TRUE(h.search(k, got)); });
    each(kN, out.miss, [&](const auto& k) { ASSERT_FALSE(h.search(k, got)); });
    each(0, out.update, [&](const auto& k) { ASSERT_TRUE(h.update(k, "value-09")); });
    each(0, out.remove, [&](const auto& k) { ASSERT_TRUE(h.remove(k)); });
  });
  auto row = [&](const char* name, const OpCost& c) {
    std::printf("RACE sim, %4zu B keys: %-6s %.2f round trips, %7.1f B read, %6.1f B written\n",
                key_len, name, c.round_trips(), c.bytes_read(), c.bytes_written());
  };
  row("search", out.search);
  row("miss", out.miss);
  row("insert", out.insert);
  row("update", out.update);
  row("remove", out.remove);
  return out;
}

// The bytes per op follow from the layout: a view reads two 128 B combined buckets (256 B), and
// an insert's views (and, with Options::reread_headers_in_view, every view) re-read their four
// 8 B headers too (288 B); sim's READs are line-atomic, so a miss needs no confirmation. A CAS
// counts 8 B each way; a KV block is 8 B header + key + value + 8 B checksum, in 64 B units.
// Only the block grows with the key.
void expect_costs(const KeyLengthCosts& k, uint32_t block, bool headers_in_view = false) {
  const double view = headers_in_view ? 288.0 : 256.0;
  EXPECT_EQ(k.search.round_trips(), 2.0);
  EXPECT_EQ(k.search.bytes_read(), view + block);
  EXPECT_EQ(k.search.bytes_written(), 0.0);
  EXPECT_EQ(k.miss.round_trips(), 1.0);
  EXPECT_EQ(k.miss.bytes_read(), view);
  EXPECT_EQ(k.insert.round_trips(), 3.0);
  EXPECT_EQ(k.insert.bytes_read(), 2 * 288.0 + 2 * 8);
  EXPECT_EQ(k.insert.bytes_written(), block + 2 * 8.0);
  EXPECT_EQ(k.update.round_trips(), 3.0);
  EXPECT_EQ(k.update.bytes_read(), view + block + 8);
  EXPECT_EQ(k.update.bytes_written(), block + 8.0);
  EXPECT_EQ(k.remove.round_trips(), 3.0);
  EXPECT_EQ(k.remove.bytes_read(), view + block + 8);
  EXPECT_EQ(k.remove.bytes_written(), 8.0);
}

TEST(RaceBytesSim, CostPerOperationByKeyLength) {
  // 8 B integer key, 8 B value: 8 + 8 + 8 + 8 = 32 -> one 64 B unit.
  expect_costs(sim_costs(8, 8), 64);
  // 32 B key: 8 + 32 + 8 + 8 = 56 -> 64 B: same cost as an integer key.
  expect_costs(sim_costs(32, 32), 64);
  // 256 B key: 8 + 256 + 8 + 8 = 280 -> 320 B.
  expect_costs(sim_costs(256, 256), 320);
  // dmrt's earlier protocol (the header re-reads in every view): 32 B more per view.
  expect_costs(sim_costs(8, 8, true), 64, true);
}
#endif

}  // namespace
}  // namespace dmrt::race
