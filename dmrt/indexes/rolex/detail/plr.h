// Optimal piecewise-linear regression (O'Rourke / Xie et al.): fewest epsilon-bounded segments in
// O(n).
#pragma once

#include <cstdint>
#include <vector>

#include "dmrt/runtime/kv.h"

namespace dmrt::rolex {

// One trained segment: position(x) = intercept + slope * (x - first_key) for x >= first_key.
// leaf_lo..leaf_hi: the leaves (of the model group) holding this segment's training keys.
struct Segment {
  Key first_key = 0;
  double slope = 0;
  double intercept = 0;
  uint64_t leaf_lo = 0, leaf_hi = 0;

  double predict(Key x) const {
    long double dx = x >= first_key ? static_cast<long double>(x - first_key) : 0.0L;
    return static_cast<double>(intercept + static_cast<long double>(slope) * dx);
  }
};

// Streaming builder. add() takes points with strictly increasing x; it returns false when the point
// cannot join the current segment within +-epsilon (the caller then finish()es the segment and
// starts a new one with that point). The feasible lines of a segment form a convex region bounded
// by the upper hull of (x, y - eps) and the lower hull of (x, y + eps); we keep both hulls and the
// two extreme lines (min and max slope) that pass through them, and answer with their mean: the
// line through their intersection whose slope is their mean (the parallelogram's bisector), or,
// when they are parallel, the one feasible line.
class OptimalPlr {
 public:
  explicit OptimalPlr(double epsilon) : eps_(epsilon) {}

  bool add(Key key, double y) {
    if (n_ == 0) {
      first_ = key;
      upper_.clear();
      lower_.clear();
      P top{0, y + eps_}, bot{0, y - eps_};
      rect_[0] = top;  // min-slope line passes rect_[0] -> rect_[2]
      rect_[1] = bot;  // max-slope line passes rect_[1] -> rect_[3]
      upper_.push_back(top);
      lower_.push_back(bot);
      ustart_ = lstart_ = 0;
      first_y_ = y;
      ++n_;
      return true;
    }
    if (key <= last_key_) return false;  // x must strictly increase
    long double x = static_cast<long double>(key - first_);
    P top{x, y + eps_}, bot{x, y - eps_};
    if (n_ == 1) {
      rect_[2] = bot;
      rect_[3] = top;
      upper_.push_back(top);
      lower_.push_back(bot);
      last_key_ = key;
      ++n_;
      return true;
    }
    // Outside the feasible wedge: the point's band misses every remaining line.
    if (slope(rect_[2], top) < slope(rect_[0], rect_[2])) return false;
    if (slope(rect_[3], bot) > slope(rect_[1], rect_[3])) return false;
    if (slope(rect_[1], top) < slope(rect_[1], rect_[3])) {
      // `top` lowers the max slope: pivot on the lower hull point that gives the smallest slope.
      size_t best = lstart_;
      long double bs = slope(lower_[best], top);
      for (size_t i = lstart_ + 1; i < lower_.size(); ++i) {
        long double s = slope(lower_[i], top);
        if (s > bs) break;
        bs = s;
        best = i;
      }
      rect_[1] = lower_[best];
      rect_[3] = top;
      lstart_ = best;
      size_t end = upper_.size();
      while (end >= ustart_ + 2 && cross(upper_[end - 2], upper_[end - 1], top) <= 0) --end;
      upper_.resize(end);
      upper_.push_back(top);
    }
    if (slope(rect_[0], bot) > slope(rect_[0], rect_[2])) {
      // `bot` raises the min slope: pivot on the upper hull point that gives the largest slope.
      size_t best = ustart_;
      long double bs = slope(upper_[best], bot);
      for (size_t i = ustart_ + 1; i < upper_.size(); ++i) {
        long double s = slope(upper_[i], bot);
        if (s < bs) break;
        bs = s;
        best = i;
      }
      rect_[0] = upper_[best];
      rect_[2] = bot;
      ustart_ = best;
      size_t end = lower_.size();
      while (end >= lstart_ + 2 && cross(lower_[end - 2], lower_[end - 1], bot) >= 0) --end;
      lower_.resize(end);
      lower_.push_back(bot);
    }
    last_key_ = key;
    ++n_;
    return true;
  }

  bool empty() const { return n_ == 0; }

  // The current segment's line; resets the builder.
  Segment finish() {
    Segment s;
    s.first_key = first_;
    if (n_ == 1) {
      s.slope = 0;
      s.intercept = static_cast<double>(first_y_);
    } else {
      long double s1 = slope(rect_[0], rect_[2]), s2 = slope(rect_[1], rect_[3]);
      // The mean of the two extreme lines (slope and intercept): at every x it lies between
      // them, so it is feasible (the constraints are linear). Through their intersection when
      // they cross; when they are parallel (one feasible line) it is that line, with no
      // intersection to compute.
      long double sl = (s1 + s2) / 2;
      long double b1 = rect_[0].y - s1 * rect_[0].x, b2 = rect_[1].y - s2 * rect_[1].x;
      s.slope = static_cast<double>(sl);
      s.intercept = static_cast<double>((b1 + b2) / 2);
    }
    n_ = 0;
    return s;
  }

 private:
  struct P {
    long double x, y;
  };
  static long double slope(const P& a, const P& b) { return (b.y - a.y) / (b.x - a.x); }
  static long double cross(const P& o, const P& a, const P& b) {
    return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
  }

  long double eps_;
  Key first_ = 0, last_key_ = 0;
  long double first_y_ = 0;
  size_t n_ = 0;
  P rect_[4]{};
  std::vector<P> upper_, lower_;
  size_t ustart_ = 0, lstart_ = 0;
};

// Segments for points (keys[i], labels[i]); keys strictly increasing. leaf_of(label) maps a label
// to its leaf so each segment knows the leaves it covers.
inline std::vector<Segment> train_plr(const std::vector<Key>& keys,
                                      const std::vector<double>& labels, double epsilon,
                                      uint32_t leaf_slots) {
  std::vector<Segment> out;
  OptimalPlr plr(epsilon);
  size_t seg_start = 0;
  auto close = [&](size_t end) {
    Segment s = plr.finish();
    s.leaf_lo = static_cast<uint64_t>(labels[seg_start]) / leaf_slots;
    s.leaf_hi = static_cast<uint64_t>(labels[end - 1]) / leaf_slots;
    out.push_back(s);
  };
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!plr.add(keys[i], labels[i])) {
      close(i);
      seg_start = i;
      plr.add(keys[i], labels[i]);
    }
  }
  if (!plr.empty()) close(keys.size());
  return out;
}

}  // namespace dmrt::rolex
