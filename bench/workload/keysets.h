// Key sets for --keyset (and the learned-index tests): uniform, normal, lognormal and
// sequential-with-gaps, sorted and unique. Workload data, so it lives with the bench.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "dmrt/runtime/kv.h"

namespace dmrt::bench {

enum class KeyDist { kUniform, kNormal, kLognormal, kSequentialGaps };

inline std::string_view key_dist_name(KeyDist d) {
  switch (d) {
    case KeyDist::kUniform:
      return "uniform";
    case KeyDist::kNormal:
      return "normal";
    case KeyDist::kLognormal:
      return "lognormal";
    case KeyDist::kSequentialGaps:
      return "seqgaps";
  }
  return "?";
}

inline KeyDist parse_key_dist(std::string_view s) {
  for (KeyDist d :
       {KeyDist::kUniform, KeyDist::kNormal, KeyDist::kLognormal, KeyDist::kSequentialGaps})
    if (s == key_dist_name(d)) return d;
  throw std::invalid_argument("unknown key distribution '" + std::string(s) +
                              "' (uniform, normal, lognormal, seqgaps)");
}

// n distinct keys in ascending order, never 0 or UINT64_MAX (reserved by the leaves).
//   uniform:   U[1, 2^63)
//   normal:    N(4, 2) * 1e12, negative draws redrawn   (the shape ROLEX's evaluation uses)
//   lognormal: LogN(0, 2) * 1e12
//   seqgaps:   ascending from 1 with gaps drawn U[1, 64] (mean ~32), every 1000th gap 10^6 wide
inline std::vector<Key> make_keyset(KeyDist dist, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Key> keys;
  keys.reserve(n);
  if (dist == KeyDist::kSequentialGaps) {
    Key k = 1;
    std::uniform_int_distribution<uint64_t> gap(1, 64);
    for (size_t i = 0; i < n; ++i) {
      keys.push_back(k);
      k += (i % 1000 == 999) ? 1'000'000 : gap(rng);
    }
    return keys;
  }
  auto draw = [&]() -> Key {
    switch (dist) {
      case KeyDist::kUniform:
        return std::uniform_int_distribution<uint64_t>(1, (uint64_t{1} << 63) - 1)(rng);
      case KeyDist::kNormal: {
        std::normal_distribution<double> nd(4.0, 2.0);
        double x;
        do x = nd(rng) * 1e12;
        while (x < 1.0);
        return static_cast<Key>(x);
      }
      case KeyDist::kLognormal: {
        std::lognormal_distribution<double> ld(0.0, 2.0);
        double x;
        do x = ld(rng) * 1e12;
        while (x < 1.0 || x > 1.8e19);
        return static_cast<Key>(x);
      }
      default:
        return 1;
    }
  };
  while (keys.size() < n) {
    size_t missing = n - keys.size();
    for (size_t i = 0; i < missing + missing / 8 + 1; ++i) keys.push_back(draw());
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  }
  // Drop surplus draws evenly (keeps the distribution's shape).
  if (keys.size() > n) {
    std::vector<Key> out;
    out.reserve(n);
    double step = double(keys.size()) / double(n);
    for (size_t i = 0; i < n; ++i) out.push_back(keys[static_cast<size_t>(i * step)]);
    keys.swap(out);
  }
  return keys;
}

}  // namespace dmrt::bench
