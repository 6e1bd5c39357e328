// Byte-string key helpers for the B+-tree tests (Sherman, CHIME, DMTree): an order-preserving
// integer-to-bytes adapter (so the integer differential and stress checks run over byte keys), a
// std::map differential run over keys of mixed lengths, and keys at the edges of byte order.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmrt/runtime/key_bytes.h"

namespace dmrt::testing {

// Integer key k as bytes: `prefix` then k's 8 big-endian bytes without their trailing zero
// bytes. Order-preserving (a stripped form is a proper prefix of any larger key sharing it) and
// invertible, so keys get mixed lengths, long shared prefixes and keys that are prefixes of
// others, while the integer checks still apply.
inline std::string bytes_of_int(const std::string& prefix, Key k) {
  char b[8];
  put_key_bytes(k, b);
  size_t n = 8;
  while (n > 0 && b[n - 1] == 0) --n;
  return prefix + std::string(b, n);
}
inline Key int_of_bytes(const std::string& prefix, std::string_view s) {
  EXPECT_EQ(s.substr(0, prefix.size()), prefix);
  char b[8] = {};
  std::string_view t = s.substr(prefix.size());
  EXPECT_LE(t.size(), 8u);
  for (size_t i = 0; i < t.size() && i < 8; ++i) b[i] = t[i];
  return key_of_bytes(std::string_view(b, 8));
}

// A handle of integer keys over the bytes overloads of H (through bytes_of_int).
template <class H>
struct BytesAsInt {
  H handle;
  std::string prefix;
  std::vector<std::pair<std::string, std::string>> brows;

  bool search(Key k, std::string& out) { return handle.search(bytes_of_int(prefix, k), out); }
  bool insert(Key k, std::string_view v) { return handle.insert(bytes_of_int(prefix, k), v); }
  bool update(Key k, std::string_view v) { return handle.update(bytes_of_int(prefix, k), v); }
  bool remove(Key k) { return handle.remove(bytes_of_int(prefix, k)); }
  void scan(Key from, size_t count, std::vector<std::pair<Key, std::string>>& rows) {
    handle.scan(std::string_view(bytes_of_int(prefix, from)), count, brows);
    rows.clear();
    for (auto& [k, v] : brows) rows.emplace_back(int_of_bytes(prefix, k), std::move(v));
  }
};

// Ranks to integers whose byte forms have 4 to 8 bytes after the prefix: (2r + 1) << 8s, s = r %
// 5 (the odd factor makes it injective).
inline Key key_of_rank_mixed(size_t r) {
  return (uint64_t{2} * r + 1) << (8 * (r % 5));
}

// Keys of 1..key_size bytes drawn from a few shared stems (long common prefixes, 0x00 and 0xff
// bytes, keys that are prefixes of others), random ops against std::map<std::string>.
template <class H>
void bytes_differential(H& h, size_t ops, size_t key_space, uint32_t seed, size_t key_size) {
  std::mt19937_64 rng(seed);
  const std::string stems[] = {std::string(key_size, 'u'), std::string(key_size, '\0'),
                               std::string(key_size, '\xff'),
                               "user" + std::string(key_size > 4 ? key_size - 4 : 0, '0')};
  std::vector<std::string> pool;
  while (pool.size() < key_space) {
    const std::string& stem = stems[rng() % 4];
    size_t len = 1 + rng() % key_size;
    size_t keep = rng() % (len + 1);  // a shared prefix, then random bytes
    std::string k = stem.substr(0, keep);
    while (k.size() < len) k.push_back(static_cast<char>(rng() % 4 == 0 ? 0 : rng() & 0xff));
    pool.push_back(std::move(k));
  }
  std::map<std::string, std::string> model;
  std::string out;
  std::vector<std::pair<std::string, std::string>> rows;
  for (size_t i = 0; i < ops; ++i) {
    const std::string& k = pool[rng() % pool.size()];
    std::string v = "v" + std::to_string(i);
    unsigned op = rng() % 100;
    if (op < 40) {
      bool exp = model.emplace(k, v).second;
      ASSERT_EQ(h.insert(k, v), exp) << "insert at op " << i;
    } else if (op < 55) {
      auto it = model.find(k);
      bool exp = it != model.end();
      if (exp) it->second = v;
      ASSERT_EQ(h.update(k, v), exp) << "update at op " << i;
    } else if (op < 65) {
      bool exp = model.erase(k) > 0;
      ASSERT_EQ(h.remove(k), exp) << "remove at op " << i;
    } else if (op < 92) {
      auto it = model.find(k);
      bool got = h.search(k, out);
      ASSERT_EQ(got, it != model.end()) << "search at op " << i;
      if (got) {
        ASSERT_EQ(out.substr(0, it->second.size()), it->second);
      }
    } else {
      size_t n = rng() % 40 + 1;
      std::string from = k.substr(0, rng() % (k.size() + 1));
      h.scan(std::string_view(from), n, rows);
      auto it = model.lower_bound(from);
      size_t j = 0;
      for (; it != model.end() && j < n; ++it, ++j) {
        ASSERT_LT(j, rows.size()) << "scan too short at op " << i;
        ASSERT_EQ(rows[j].first, it->first) << "scan row " << j << " at op " << i;
        ASSERT_EQ(rows[j].second.substr(0, it->second.size()), it->second);
      }
      ASSERT_EQ(rows.size(), j) << "scan too long at op " << i;
    }
  }
  h.scan(std::string_view(), model.size() + 10, rows);
  ASSERT_EQ(rows.size(), model.size());
  size_t j = 0;
  for (auto& [k, v] : model) {
    ASSERT_EQ(rows[j].first, k);
    ++j;
  }
}

// Keys at the edges of byte order, for a tree of key_size 32: 0x00 and 0xff keys of 1, 2 and 32
// bytes, keys that are prefixes of others ("a", "a\0", "a\0\0"; "b", "b\0"), keys sharing 31
// bytes ("user0...0" and it + "1", + "2"), then `bulk` (enough keys for leaf and internal
// splits). Inserts (and duplicate inserts) them, runs loaded() (e.g. to check the height), then
// checks searches of present and absent keys, a full scan, scans from absent keys, update and
// remove. *model, if given, gets what the tree holds at the end.
template <class H, class Loaded>
void edge_keys_in_byte_order(H& h, const std::vector<std::string>& bulk, Loaded&& loaded,
                             std::map<std::string, std::string>* model_out = nullptr) {
  const std::string zeros = "user" + std::string(27, '0');
  std::vector<std::string> keys = {"a",
                                   std::string("a\0", 2),
                                   std::string("a\0\0", 3),
                                   "a\xff",
                                   "ab",
                                   std::string(1, '\0'),
                                   std::string(2, '\0'),
                                   std::string(32, '\0'),
                                   std::string(32, '\xff'),
                                   "\xff",
                                   std::string("\xff\0", 2),
                                   "b",
                                   std::string("b\0", 2),
                                   "b\xff",
                                   "bc",
                                   zeros + "1",
                                   zeros + "2",
                                   zeros,
                                   "user",
                                   "use"};
  keys.insert(keys.end(), bulk.begin(), bulk.end());
  std::map<std::string, std::string> model;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string v = "v" + std::to_string(i);
    model[keys[i]] = v;
    ASSERT_TRUE(h.insert(keys[i], v)) << i;
    ASSERT_FALSE(h.insert(keys[i], "x")) << i;
  }
  loaded();
  std::string out;
  for (auto& [k, v] : model) {
    ASSERT_TRUE(h.search(k, out));
    EXPECT_EQ(out.substr(0, v.size()), v);
  }
  EXPECT_FALSE(h.search(std::string("a\0\0\0", 4), out));  // a prefix-extension never inserted
  EXPECT_FALSE(h.search(std::string(3, '\0'), out));       // between two stored prefixes
  EXPECT_FALSE(h.search("us", out));
  EXPECT_FALSE(h.search(zeros + "3", out));  // shares 31 bytes with stored keys
  std::vector<std::pair<std::string, std::string>> rows;
  h.scan(std::string_view(), 1000, rows);
  ASSERT_EQ(rows.size(), model.size());
  size_t j = 0;
  for (auto& [k, v] : model) {
    EXPECT_EQ(rows[j].first, k);
    EXPECT_EQ(rows[j].second.substr(0, v.size()), v);
    ++j;
  }
  // From keys between others: the next keys in byte order.
  h.scan(std::string_view("a\0\0\0", 4), 3, rows);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].first, "ab");  // 'b' < 0xff
  EXPECT_EQ(rows[1].first, "a\xff");
  EXPECT_EQ(rows[2].first, "b");
  h.scan(std::string_view("b\0\0", 3), 3, rows);  // between "b\0" and "bc"
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].first, "bc");
  EXPECT_EQ(rows[1].first, "b\xff");
  EXPECT_EQ(rows[2].first, "use");
  EXPECT_TRUE(h.update(zeros + "2", "new"));
  model[zeros + "2"] = "new";
  EXPECT_FALSE(h.update(zeros + "3", "new"));
  EXPECT_TRUE(h.remove(zeros + "1"));
  model.erase(zeros + "1");
  EXPECT_FALSE(h.remove(zeros + "1"));
  EXPECT_FALSE(h.search(zeros + "1", out));
  ASSERT_TRUE(h.search(zeros + "2", out));
  EXPECT_EQ(out.substr(0, 3), "new");
  ASSERT_TRUE(h.search(zeros, out));
  if (model_out) *model_out = std::move(model);
}

}  // namespace dmrt::testing
