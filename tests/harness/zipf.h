// Zipfian key generator for the harness (self-contained; dmrt-bench has its own).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>

namespace dmrt::harness {

// Ranks 0..n-1 with P(rank r) proportional to 1/(r+1)^theta; rank 0 is the hottest. Uses the
// closed-form inversion of Gray et al. ("Quickly generating billion-record synthetic databases",
// SIGMOD '94): O(n) set-up for the zeta constant, O(1) per draw. theta in [0, 1) U (1, ...);
// theta == 0 is uniform.
class Zipfian {
 public:
  Zipfian(uint64_t n, double theta) : n_(n), theta_(theta) {
    if (n == 0) throw std::invalid_argument("Zipfian over zero items");
    if (theta < 0 || theta == 1.0)
      throw std::invalid_argument("Zipfian theta must be >= 0 and != 1");
    zeta_n_ = zeta(n, theta);
    double zeta2 = zeta(std::min<uint64_t>(2, n), theta);
    alpha_ = 1.0 / (1.0 - theta);
    eta_ = n > 1 ? (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) /
                       (1.0 - zeta2 / zeta_n_)
                 : 1.0;
    half_pow_ = 1.0 + std::pow(0.5, theta);
  }

  template <class Rng>
  uint64_t operator()(Rng& rng) {
    if (theta_ == 0) return std::uniform_int_distribution<uint64_t>(0, n_ - 1)(rng);
    double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    double uz = u * zeta_n_;
    if (uz < 1.0) return 0;
    if (uz < half_pow_) return n_ > 1 ? 1 : 0;
    auto r =
        static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return r >= n_ ? n_ - 1 : r;
  }

  uint64_t items() const { return n_; }
  double theta() const { return theta_; }

 private:
  static double zeta(uint64_t n, double theta) {
    double s = 0;
    for (uint64_t i = 1; i <= n; ++i) s += 1.0 / std::pow(static_cast<double>(i), theta);
    return s;
  }
  uint64_t n_;
  double theta_, zeta_n_ = 0, alpha_ = 0, eta_ = 0, half_pow_ = 0;
};

}  // namespace dmrt::harness
