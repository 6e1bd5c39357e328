// The zipfian generator of Gray et al. ("Quickly generating billion-record synthetic databases",
// SIGMOD '94), shared by dmrt-bench's key choosers and the test suites.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>

namespace dmrt::bench {

// zeta(n, theta) = sum_{i=1..n} i^-theta, continued from a previous partial sum.
inline double zeta_extend(uint64_t from, uint64_t to, double theta, double sum) {
  for (uint64_t i = from + 1; i <= to; ++i) sum += std::pow(static_cast<double>(i), -theta);
  return sum;
}

// Ranks 0..n-1 with P(rank i) proportional to 1/(i+1)^theta; rank 0 is the most popular.
// Closed-form inversion: O(n) set-up for zeta(n), O(1) per draw. zeta(n) is computed once (pass a
// precomputed value to share it between workers) and extended incrementally when n grows, as YCSB
// does while inserts enlarge the key space. theta in [0, 1) U (1, ...); 0 is (near) uniform.
class Zipfian {
 public:
  Zipfian(uint64_t items, double theta, std::optional<double> zetan = std::nullopt)
      : theta_(theta), alpha_(1.0 / (1.0 - theta)) {
    if (!(theta >= 0) || theta == 1.0)
      throw std::invalid_argument("zipfian theta must be >= 0 and != 1");
    zeta2_ = zeta_extend(0, 2, theta, 0.0);
    n_ = items;
    zetan_ = zetan ? *zetan : zeta_extend(0, items, theta, 0.0);
    update_eta();
  }

  uint64_t items() const { return n_; }
  double theta() const { return theta_; }
  double zetan() const { return zetan_; }

  // Grows (never shrinks) the item count, extending zeta incrementally.
  void grow_to(uint64_t items) {
    if (items <= n_) return;
    zetan_ = zeta_extend(n_, items, theta_, zetan_);
    n_ = items;
    update_eta();
  }

  // A rank from `rng`: the bench's Rng (its unit()) or any standard random bit generator.
  template <class R>
  uint64_t next(R& rng) {
    double u;
    if constexpr (requires { rng.unit(); })
      u = rng.unit();
    else
      u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    double uz = u * zetan_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + half_pow_theta_) return n_ > 1 ? 1 : 0;
    auto r =
        static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return r < n_ ? r : n_ - 1;
  }
  template <class R>
  uint64_t operator()(R& rng) {
    return next(rng);
  }

 private:
  void update_eta() {
    half_pow_theta_ = std::pow(0.5, theta_);
    eta_ = n_ > 1 ? (1.0 - std::pow(2.0 / static_cast<double>(n_), 1.0 - theta_)) /
                        (1.0 - zeta2_ / zetan_)
                  : 0.0;
  }
  double theta_, alpha_, zeta2_ = 0, zetan_ = 0, eta_ = 0, half_pow_theta_ = 0;
  uint64_t n_ = 0;
};

}  // namespace dmrt::bench
