// ROLEX upper models (§3.2): PLR levels trained over the model groups' smallest keys, PGM-style,
// that a compute node uses to find a key's group with a search bounded by the model error.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dmrt/indexes/rolex/detail/plr.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::rolex {

// levels[0] is trained over the group keys (label = group number), levels[l] over the first keys
// of levels[l-1]'s segments (label = segment number), up to a level of one segment. Each segment's
// leaf_lo..leaf_hi hold the labels it was trained on. The groups never change after creation, so
// neither do these models: they never go stale.
struct UpperModels {
  std::vector<std::vector<Segment>> levels;

  static UpperModels train(const std::vector<Key>& group_keys, uint32_t epsilon) {
    UpperModels u;
    std::vector<Key> keys = group_keys;
    for (;;) {
      std::vector<double> labels(keys.size());
      for (size_t i = 0; i < keys.size(); ++i) labels[i] = double(i);
      // leaf_slots 1: the segment's leaf range is its label range.
      u.levels.push_back(train_plr(keys, labels, epsilon, 1));
      if (u.levels.back().size() <= 1) break;
      keys.clear();
      for (const Segment& s : u.levels.back()) keys.push_back(s.first_key);
    }
    return u;
  }

  size_t segments() const {
    size_t n = 0;
    for (const auto& l : levels) n += l.size();
    return n;
  }
  uint64_t bytes() const { return 40 * segments(); }

  // [words][levels][n_0 .. n_{L-1}][segments, 5 words each, level 0 first]
  std::vector<uint64_t> serialize() const {
    std::vector<uint64_t> w{0, levels.size()};
    for (const auto& l : levels) w.push_back(l.size());
    for (const auto& l : levels)
      for (const Segment& s : l) {
        uint64_t sl, ic;
        std::memcpy(&sl, &s.slope, 8);
        std::memcpy(&ic, &s.intercept, 8);
        w.insert(w.end(), {s.first_key, sl, ic, s.leaf_lo, s.leaf_hi});
      }
    w[0] = w.size();
    return w;
  }
  // `w` holds w[0] words; false when it is not a well-formed object.
  static bool parse(const uint64_t* w, UpperModels& out) {
    uint64_t words = w[0], n = w[1];
    if (words < 2 + n || n == 0) return false;
    out.levels.assign(n, {});
    const uint64_t* s = w + 2 + n;
    for (uint64_t l = 0; l < n; ++l) {
      if (s + 5 * w[2 + l] > w + words) return false;
      for (uint64_t i = 0; i < w[2 + l]; ++i, s += 5) {
        Segment seg;
        seg.first_key = s[0];
        std::memcpy(&seg.slope, &s[1], 8);
        std::memcpy(&seg.intercept, &s[2], 8);
        seg.leaf_lo = s[3];
        seg.leaf_hi = s[4];
        out.levels[l].push_back(seg);
      }
    }
    return out.levels.back().size() == 1;
  }

  // The group of `k`: the last group whose smallest key is <= k (group 0 below them all). From
  // the top, each level's segment predicts a position p in the array below; for a key between
  // training keys i and i+1 of that segment, Eq. 1 at both gives i in [p - eps - 1, p + eps], so
  // a search of that window (clamped to the segment's labels) finds it. A window that misses
  // (floating point) falls back to a search of the whole array below: CPU, never a round trip,
  // counted in `misses`.
  size_t locate(const std::vector<Key>& group_keys, Key k, uint32_t epsilon,
                uint64_t& misses) const {
    size_t pos = 0;
    const double eps = double(epsilon);
    for (size_t l = levels.size(); l-- > 0;) {
      const Segment& seg = levels[l][pos];
      auto below = [&](size_t i) -> Key {
        return l == 0 ? group_keys[i] : levels[l - 1][i].first_key;
      };
      const size_t n = l == 0 ? group_keys.size() : levels[l - 1].size();
      const double p = seg.predict(k);
      auto clamp = [&](double x) -> size_t {
        if (!(x >= double(seg.leaf_lo))) return seg.leaf_lo;
        if (x >= double(seg.leaf_hi)) return seg.leaf_hi;
        return static_cast<size_t>(x);
      };
      size_t a = clamp(std::floor(p - eps - 1)), b = clamp(std::ceil(p + eps));
      // Last i in [a, b] with below(i) <= k.
      size_t lo = a, hi = b + 1;  // below(lo - 1) <= k < below(hi) once narrowed
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (below(mid) <= k)
          lo = mid + 1;
        else
          hi = mid;
      }
      size_t i = lo > a ? lo - 1 : a;
      bool ok = (below(i) <= k || i == 0) && (i + 1 >= n || k < below(i + 1));
      if (!ok) {
        ++misses;
        size_t f = 0, e = n;  // first index with below(index) > k
        while (f < e) {
          size_t mid = (f + e) / 2;
          if (below(mid) <= k)
            f = mid + 1;
          else
            e = mid;
        }
        i = f == 0 ? 0 : f - 1;
      }
      pos = i;
    }
    return pos;
  }
};

}  // namespace dmrt::rolex
