// HStore with byte-string keys (key_size > 8): skiplist byte order, the record layout, mixed
// lengths / prefixes / 0x00 and 0xff bytes against std::map, limits, and rebuilds of both servers.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "dmrt/indexes/hstore/detail/skiplist.h"
#include "dmrt/runtime/key_bytes.h"
#include "hstore_test_util.h"

namespace dmrt {
namespace {

using testing::delta;
using testing::HStoreCluster;

// Keys meant to trip every comparison: prefixes of each other, long shared prefixes, 0x00 and
// 0xff bytes, the shortest and the longest keys.
std::vector<std::string> awkward_keys(size_t key_size) {
  using namespace std::string_literals;
  std::vector<std::string> ks = {"a"s,
                                 "ab"s,
                                 "ab\0"s,
                                 "ab\0\0"s,
                                 "ab\xff"s,
                                 "\0"s,
                                 "\0\0"s,
                                 "\xff"s,
                                 std::string(8, '\xff'),
                                 std::string(9, '\xff'),
                                 std::string(8, '\0'),
                                 std::string(9, '\0'),
                                 "abcdefgh"s,
                                 "abcdefgh\0"s,
                                 "abcdefghi"s,
                                 "abcdefgh\xff"s,
                                 std::string(key_size, 'z'),
                                 std::string(key_size, '\0'),
                                 std::string(key_size, '\xff'),
                                 std::string(key_size - 1, '\xff')};
  // "user" + zeros + a number: keys sharing all but their last bytes.
  for (int i = 1; i <= 12; ++i) {
    std::string n = std::to_string(i);
    ks.push_back("user" + std::string(key_size - 4 - n.size(), '0') + n);
    ks.push_back("user" + std::string(std::min<size_t>(20, key_size - 4 - n.size()), '0') + n);
  }
  for (Key k : {Key{1}, Key{2}, Key{0x0102030405060708}, ~Key{0}}) ks.push_back(key_bytes(k));
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

std::string random_key(std::mt19937_64& rng, size_t key_size) {
  // Few distinct bytes and short lengths make prefixes and shared prefixes common.
  static const char alphabet[] = {'\0', '\x01', 'a', 'b', '\x7f', '\x80', '\xfe', '\xff'};
  size_t len = 1 + rng() % (rng() % 4 == 0 ? key_size : std::min<size_t>(key_size, 12));
  std::string k(len, '\0');
  for (auto& ch : k) ch = alphabet[rng() % 8];
  return k;
}

TEST(HStoreKeys, SkipListByteOrder) {
  for (uint32_t key_size : {32u, 256u}) {
    hstore::SkipList sl(11, key_size);
    std::map<std::string, uint64_t> model;
    std::mt19937_64 rng(key_size);
    for (const auto& k : awkward_keys(key_size)) {
      ASSERT_TRUE(sl.upsert(k, k.size()));
      model[k] = k.size();
    }
    for (int i = 0; i < 60000; ++i) {
      std::string k = random_key(rng, key_size);
      switch (rng() % 4) {
        case 0:
        case 1: {
          uint64_t v = rng();
          ASSERT_EQ(sl.upsert(k, v), model.count(k) == 0);
          model[k] = v;
          break;
        }
        case 2:
          ASSERT_EQ(sl.erase(k), model.erase(k) == 1);
          break;
        default: {
          uint64_t v = 0;
          auto it = model.find(k);
          ASSERT_EQ(sl.find(k, v), it != model.end());
          if (it != model.end()) {
            ASSERT_EQ(v, it->second);
          }
          auto lb = model.lower_bound(k);
          auto* n = sl.lower_bound(k);
          for (int j = 0; j < 5; ++j, ++lb, n = n ? hstore::SkipList::next(n) : nullptr) {
            ASSERT_EQ(n == nullptr, lb == model.end());
            if (!n) break;
            ASSERT_EQ(n->key(), lb->first);
          }
        }
      }
      ASSERT_EQ(sl.size(), model.size());
    }
    // The whole list, in byte order; and a list built from sorted rows agrees.
    std::vector<std::pair<std::string, uint64_t>> rows(model.begin(), model.end());
    size_t i = 0;
    for (auto* n = sl.first(); n; n = hstore::SkipList::next(n), ++i) {
      ASSERT_LT(i, rows.size());
      ASSERT_EQ(n->key(), rows[i].first);
      ASSERT_EQ(n->value, rows[i].second);
    }
    ASSERT_EQ(i, rows.size());
    hstore::SkipList built(5, key_size);
    built.build_sorted(rows);
    for (const auto& [k, v] : rows) {
      uint64_t got = 0;
      ASSERT_TRUE(built.find(k, got));
      ASSERT_EQ(got, v);
    }
  }
}

TEST(HStoreKeys, RecordLayout) {
  using R = hstore::Record;
  using C = R::Check;
  const std::string k = "user00000000000000000042";  // 24 bytes
  std::string rec;
  R::encode(k, "hello", true, rec);
  // Header 16, key 24, value 5 padded to 8.
  ASSERT_EQ(rec.size(), 16u + 24 + 8);
  EXPECT_EQ(R::bytes_for(k.size(), 5), rec.size());
  const uint32_t b = static_cast<uint32_t>(rec.size());
  EXPECT_EQ(R::classify(rec.data(), b, k, true), C::kMatch);
  EXPECT_EQ(R::classify(rec.data(), b, "user00000000000000000043", true), C::kOtherKey);
  EXPECT_EQ(R::classify(rec.data(), b, "user0000000000000000004", true), C::kOtherKey);
  EXPECT_EQ(R::value(rec.data(), true), "hello");
  std::string got;
  EXPECT_TRUE(R::header_key(rec.data(), b, R::head_bytes(b, 32, true), true, got));
  EXPECT_EQ(got, k);
  EXPECT_EQ(R::head_bytes(b, 32, true), b);    // never more than the record
  EXPECT_EQ(R::head_bytes(b, 3, true), 24u);   // header + 3 key bytes padded
  EXPECT_EQ(R::head_bytes(b, 3, false), 16u);  // integer keys: the 16-byte header
  EXPECT_TRUE(R::header_is(rec.data(), b, b, k, true));
  EXPECT_FALSE(R::header_is(rec.data(), b, 24, "abc", true));
  EXPECT_FALSE(R::header_key(rec.data(), b, 24, true, got));  // key longer than what was read
  rec[16 + 3] ^= 1;
  EXPECT_EQ(R::classify(rec.data(), b, k, true), C::kTorn);
  // Integer keys through the byte interface: the 8-byte layout, unchanged.
  std::string a, c;
  R::encode(key_bytes(42), "hello", false, a);
  R::encode(Key{42}, "hello", c);
  EXPECT_EQ(a, c);
  EXPECT_EQ(R::classify(a.data(), 24, key_bytes(42), false), C::kMatch);
  // Key + value beyond one record's 2040 bytes.
  EXPECT_THROW(R::encode(std::string(1024, 'k'), std::string(1001, 'v'), true, rec), LimitError);
  R::encode(std::string(1024, 'k'), std::string(1000, 'v'), true, rec);
  EXPECT_EQ(rec.size(), R::kMaxBytes);
}

hstore::Options keys_options(uint32_t key_size) {
  hstore::Options o;
  o.key_size = key_size;
  o.expected_keys = 8192;
  o.status_poll_ns = 60'000'000'000ull;
  o.grace_ns = 20'000'000'000ull;
  return o;
}

// Every key of `model` found with its value, misses missed, and scans from every key (and from
// keys between them) return the model's rows in byte order.
template <class H>
void expect_same(H& h, const std::map<std::string, std::string>& model,
                 const std::vector<std::string>& probes) {
  std::string out;
  for (const auto& [k, v] : model) {
    ASSERT_TRUE(h.search(KeyView(k), out)) << hstore::key_text(k, true);
    ASSERT_EQ(out, v);
  }
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& p : probes) {
    if (!model.count(p)) {
      ASSERT_FALSE(h.search(KeyView(p), out)) << hstore::key_text(p, true);
    }
    h.scan(KeyView(p), 7, rows);
    auto it = model.lower_bound(p);
    size_t i = 0;
    for (; i < 7 && it != model.end(); ++i, ++it) {
      ASSERT_LT(i, rows.size()) << hstore::key_text(p, true);
      ASSERT_EQ(rows[i].first, it->first);
      ASSERT_EQ(rows[i].second, it->second);
    }
    ASSERT_EQ(rows.size(), i);
  }
  h.scan(KeyView("\0", 1), model.size() + 3, rows);
  ASSERT_EQ(rows.size(), model.size());
  auto it = model.begin();
  for (size_t i = 0; i < rows.size(); ++i, ++it) ASSERT_EQ(rows[i].first, it->first);
}

TEST(HStoreKeys, MixedLengthsPrefixesAndExtremeBytes) {
  for (uint32_t key_size : {32u, 256u}) {
    HStoreCluster cl(keys_options(key_size));
    auto c = cl.client(1);
    auto h = cl.index->handle(c);
    static_assert(BytesRangeHandle<decltype(h)>);
    std::map<std::string, std::string> model;
    const auto keys = awkward_keys(key_size);
    for (size_t i = 0; i < keys.size(); ++i) {
      std::string v = "v" + std::to_string(i) + std::string(i % 5, '\0');
      ASSERT_TRUE(h.insert(KeyView(keys[i]), v)) << hstore::key_text(keys[i], true);
      model[keys[i]] = v;
    }
    // Insert-if-absent, update and remove semantics, per key.
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_FALSE(h.insert(KeyView(keys[i]), "again"));
      if (i % 3 == 0) {
        ASSERT_TRUE(h.update(KeyView(keys[i]), "u" + std::to_string(i)));
        model[keys[i]] = "u" + std::to_string(i);
      }
      if (i % 4 == 1) {
        ASSERT_TRUE(h.remove(KeyView(keys[i])));
        ASSERT_FALSE(h.remove(KeyView(keys[i])));
        ASSERT_FALSE(h.update(KeyView(keys[i]), "x"));
        model.erase(keys[i]);
      }
    }
    std::vector<std::string> probes = keys;
    for (const auto& k : keys) probes.push_back(k.substr(0, k.size() / 2 + 1) + "\x80");
    expect_same(h, model, probes);
    // Random keys against the model.
    std::mt19937_64 rng(key_size + 1);
    for (int i = 0; i < 1500; ++i) {
      std::string k = random_key(rng, key_size), v = "r" + std::to_string(i);
      switch (rng() % 3) {
        case 0:
          ASSERT_EQ(h.insert(KeyView(k), v), model.emplace(k, v).second);
          break;
        case 1: {
          bool had = model.count(k);
          ASSERT_EQ(h.update(KeyView(k), v), had);
          if (had) model[k] = v;
          break;
        }
        default:
          ASSERT_EQ(h.remove(KeyView(k)), model.erase(k) == 1);
      }
      probes.push_back(k);
    }
    expect_same(h, model, probes);
    // The integer overloads: k is key_bytes(k), in the same key space, numeric order = byte order.
    std::string out;
    using namespace std::string_literals;
    ASSERT_TRUE(h.insert(Key{0x6162636465666700}, "int"));  // "abcdefg\0"
    EXPECT_TRUE(h.search(KeyView("abcdefg\0"s), out));
    EXPECT_EQ(out, "int");
    ASSERT_TRUE(h.update(KeyView("abcdefg\0"s), "bytes"));
    EXPECT_TRUE(h.search(Key{0x6162636465666700}, out));
    EXPECT_EQ(out, "bytes");
    for (Key k = 1000; k < 1010; ++k) ASSERT_TRUE(h.insert(k, "n" + std::to_string(k)));
    std::vector<std::pair<Key, std::string>> irows;
    h.scan(Key{1003}, 4, irows);
    ASSERT_EQ(irows.size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(irows[i].first, 1003 + i);
    EXPECT_TRUE(h.remove(Key{1003}));
    EXPECT_FALSE(h.search(KeyView(key_bytes(1003)), out));
    // Limits: empty and over-long keys.
    EXPECT_THROW(h.search(KeyView(), out), LimitError);
    EXPECT_THROW(h.insert(KeyView(std::string(key_size + 1, 'k')), "v"), LimitError);
    EXPECT_THROW(h.update(KeyView(""), "v"), LimitError);
    EXPECT_THROW(h.remove(KeyView(std::string(key_size + 1, 'k'))), LimitError);
    std::vector<std::pair<std::string, std::string>> rows;
    EXPECT_THROW(h.scan(KeyView(std::string(key_size + 1, 'k')), 1, rows), LimitError);
  }
}

TEST(HStoreKeys, IntegerIndexTakesOnlyEightByteKeys) {
  auto o = keys_options(8);
  HStoreCluster cl(o);
  auto c = cl.client(1);
  auto h = cl.index->handle(c);
  std::string out;
  ASSERT_TRUE(h.insert(KeyView(key_bytes(77)), "seventy-seven"));
  ASSERT_TRUE(h.search(Key{77}, out));
  EXPECT_EQ(out, "seventy-seven");
  ASSERT_TRUE(h.insert(Key{78}, "78"));
  std::vector<std::pair<std::string, std::string>> rows;
  h.scan(KeyView(key_bytes(0)), 10, rows);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].first, key_bytes(77));
  EXPECT_EQ(rows[1].first, key_bytes(78));
  EXPECT_THROW(h.insert(KeyView("short"), "v"), LimitError);
  EXPECT_THROW(h.search(KeyView("ninebytes"), out), LimitError);
  EXPECT_THROW(HStoreCluster(keys_options(0)), ConfigError);
  EXPECT_THROW(HStoreCluster(keys_options(kMaxKeyBytes + 1)), ConfigError);
  // A ship entry with the longest key must fit one mailbox message (480 payload bytes here:
  // 3 header words + 5 entry words + 52 key words).
  EXPECT_THROW(HStoreCluster(keys_options(417)), ConfigError);
  HStoreCluster big(keys_options(416));
  auto bc = big.client(1);
  auto bh = big.index->handle(bc);
  ASSERT_TRUE(bh.insert(KeyView(std::string(416, 'k')), "v"));
  ASSERT_TRUE(bh.search(KeyView(std::string(416, 'k')), out));
  EXPECT_EQ(out, "v");
  EXPECT_EQ(big.index->meta().ship_batch, 1u);
}

// Losing either server with byte keys in the index: the SLS rebuilds from the table and the
// records' keys in the pool; the HTS rebuilds from the (key, slot) rows the SLS streams.
TEST(HStoreKeys, RebuildsWithByteKeys) {
  const uint32_t key_size = 64;
  HStoreCluster cl(keys_options(key_size));
  auto c = cl.client(1);
  auto h = cl.index->handle(c);
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(5);
  for (const auto& k : awkward_keys(key_size)) model[k] = "a" + std::to_string(k.size());
  while (model.size() < 600) model[random_key(rng, key_size)] = "r" + std::to_string(model.size());
  for (auto& [k, v] : model) ASSERT_TRUE(h.insert(KeyView(k), v));
  std::vector<std::string> probes;
  for (auto& [k, v] : model) probes.push_back(k);
  cl.servers->fail_sls(cl.setup);
  cl.servers->rebuild_sls();
  ASSERT_TRUE(cl.servers->wait_serving(cl.setup, 30'000'000'000ull));
  expect_same(h, model, probes);
  // HTS lost: point reads go to the SLS (one request) while it is down.
  cl.servers->fail_hts(cl.setup);
  std::string out;
  for (size_t i = 0; i < probes.size(); i += 37) {
    auto d = delta(c, [&] { ASSERT_TRUE(h.search(KeyView(probes[i]), out)); });
    EXPECT_EQ(out, model[probes[i]]);
    EXPECT_EQ(d.messages, 1u);
  }
  EXPECT_FALSE(h.search(KeyView("not there"), out));
  cl.servers->rebuild_hts();
  ASSERT_TRUE(cl.servers->wait_serving(cl.setup, 30'000'000'000ull));
  expect_same(h, model, probes);
  for (size_t i = 0; i < probes.size(); i += 3) {
    ASSERT_TRUE(h.remove(KeyView(probes[i])));
    model.erase(probes[i]);
  }
  ASSERT_TRUE(h.insert(KeyView("after"), "rebuild"));
  model["after"] = "rebuild";
  expect_same(h, model, probes);
  auto s = cl.index->stats(cl.setup);
  EXPECT_EQ(s["hts_rebuilds"], 1);
  EXPECT_EQ(s["sls_rebuilds"], 2);  // the start counts as one
  EXPECT_EQ(s["hts_rebuild_keys"], 600);
  EXPECT_EQ(s["sls_rebuild_keys"], 600);
}

// A bulk load of integer keys into a byte-key index: the keys are their 8 bytes.
TEST(HStoreKeys, BulkLoadIntoAByteKeyIndex) {
  std::vector<Key> keys;
  for (Key k = 1; k <= 500; ++k) keys.push_back(k * 3);
  HStoreCluster cl(keys_options(40), 2, 1, uint64_t{128} << 20, keys,
                   [](Key k) { return "b" + std::to_string(k); });
  auto c = cl.client(1);
  auto h = cl.index->handle(c);
  std::string out;
  ASSERT_TRUE(h.search(KeyView(key_bytes(300)), out));
  EXPECT_EQ(out, "b300");
  ASSERT_TRUE(h.insert(KeyView("longer than eight bytes"), "x"));
  std::vector<std::pair<std::string, std::string>> rows;
  h.scan(KeyView(key_bytes(1497)), 5, rows);
  ASSERT_EQ(rows.size(), 3u);  // 1497, 1500, then the long key ('l' > 0x00)
  EXPECT_EQ(rows[0].first, key_bytes(1497));
  EXPECT_EQ(rows[1].first, key_bytes(1500));
  EXPECT_EQ(rows[2].first, "longer than eight bytes");
}

// A request whose key is longer than key_size (a client not checking it) is dropped by the HTS
// and counted as malformed: the servers never store a key their skiplist nodes are not sized for.
TEST(HStoreKeys, ServersDropOverlongKeys) {
  HStoreCluster cl(keys_options(16));
  auto c = cl.client(1);
  const auto& m = cl.index->meta();
  const std::string k(17, 'k');
  std::vector<uint64_t> req = {uint64_t(hstore::Op::kRemove) | (uint64_t{1} << 32), k.size(), 0, 7};
  hstore::append_key(req, k, true);
  ASSERT_TRUE(hstore::post(c, m.hts_node, m.hts_inbox, hstore::kReq, req, 1, c.reply_mailbox(),
                           [] { return false; }));
  for (int i = 0; i < 200000 && cl.index->stats(cl.setup)["malformed_messages"] == 0; ++i)
    c.pause();
  EXPECT_EQ(cl.index->stats(cl.setup)["malformed_messages"], 1);
  auto h = cl.index->handle(c);
  ASSERT_TRUE(h.insert(KeyView(std::string(16, 'k')), "fine"));
  std::string out;
  ASSERT_TRUE(h.search(KeyView(std::string(16, 'k')), out));
  EXPECT_EQ(out, "fine");
}

}  // namespace
}  // namespace dmrt
