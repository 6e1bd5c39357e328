// Byte-string key helpers for Sherman's tests: an order-preserving integer-to-bytes adapter (so
// the integer differential and stress checks run over byte keys) and a std::map differential run
// over keys of mixed lengths.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/key_bytes.h"

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

}  // namespace dmrt::testing
