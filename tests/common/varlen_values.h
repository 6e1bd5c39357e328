// Values of every length up to value_size for the indirect-item tests (CHIME-Indirect,
// ROLEX-Indirect: the value lives in an out-of-leaf KV block), and their std::map differential.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../sherman/kv_checks.h"

namespace dmrt::testing {

// A value of `len` bytes naming its key and version, so a value read from the wrong block or an
// old one differs from the model's.
inline std::string varlen_value(Key k, uint32_t ver, size_t len) {
  std::string v(len, '\0');
  for (size_t i = 0; i < len; ++i) v[i] = static_cast<char>((k >> (8 * (i % 8))) + ver + i);
  return v;
}

// Random inserts, updates, removes, searches and 20-row scans against `model`, values of
// 1..value_size bytes; a search returns them zero-padded to value_size, as inline values are.
template <class H>
void varlen_differential(H& h, std::map<Key, std::string>& model, size_t ops, size_t keys,
                         uint32_t value_size, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::string out;
  std::vector<std::pair<Key, std::string>> rows;
  auto pad = [&](std::string v) {
    v.resize(value_size, '\0');
    return v;
  };
  for (size_t i = 0; i < ops; ++i) {
    Key k = key_of_rank(rng() % keys);
    std::string v = varlen_value(k, static_cast<uint32_t>(i), 1 + rng() % value_size);
    unsigned op = rng() % 100;
    if (op < 40) {
      bool exp = model.emplace(k, pad(v)).second;
      ASSERT_EQ(h.insert(k, v), exp) << "insert at op " << i;
    } else if (op < 60) {
      auto it = model.find(k);
      bool exp = it != model.end();
      if (exp) it->second = pad(v);
      ASSERT_EQ(h.update(k, v), exp) << "update at op " << i;
    } else if (op < 70) {
      ASSERT_EQ(h.remove(k), model.erase(k) == 1) << "remove at op " << i;
    } else if (op < 95) {
      auto it = model.find(k);
      ASSERT_EQ(h.search(k, out), it != model.end()) << "search at op " << i;
      if (it != model.end()) {
        ASSERT_EQ(out, it->second) << "search at op " << i;
      }
    } else {
      h.scan(k, 20, rows);
      auto it = model.lower_bound(k);
      for (size_t r = 0; r < rows.size(); ++r, ++it) {
        ASSERT_NE(it, model.end());
        ASSERT_EQ(rows[r].first, it->first);
        ASSERT_EQ(rows[r].second, it->second);
      }
      ASSERT_TRUE(rows.size() == 20 || it == model.end()) << "short scan at op " << i;
    }
  }
}

}  // namespace dmrt::testing
