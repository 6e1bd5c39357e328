// The checker's clock: how every phase of a check notices its deadline (or a cancel) within a
// bounded amount of work, whatever the history's shape (internal to dmrt/check/).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

namespace dmrt::check_detail {

using Clock = std::chrono::steady_clock;

// Why a search returned kUnknown.
enum class StopReason : uint8_t { kNone, kSteps, kDeadline, kMemory, kCancelled };

// The deadline and the cancel flag, read on a counter of work rather than of search steps: every
// phase adds the units it does (an operation copied or compared, a candidate looked at, a word of
// a memoized configuration hashed), and the clock is read once every kUnits of them. A unit costs
// at most some tens of nanoseconds, so two reads are at most about a millisecond apart whatever
// the history's shape, while the reads cost under 1% of the work. Once stopped, it stays stopped.
class Poll {
 public:
  static constexpr uint64_t kUnits = 1 << 14;

  Poll() = default;
  Poll(Clock::time_point deadline, const std::atomic<bool>* cancel)
      : deadline_(deadline), cancel_(cancel) {}

  // Adds `units` of work; true when the work must stop (deadline passed, or cancelled).
  bool tick(uint64_t units = 1) {
    work_ += units;
    if (work_ < next_) return stop_ != StopReason::kNone;
    next_ = work_ + kUnits;
    return check();
  }
  // Reads the clock (and the flag) now.
  bool check() {
    if (stop_ != StopReason::kNone) return true;
    if (cancel_ && cancel_->load(std::memory_order_relaxed))
      stop_ = StopReason::kCancelled;
    else if (deadline_ != Clock::time_point::max() && Clock::now() > deadline_)
      stop_ = StopReason::kDeadline;
    return stop_ != StopReason::kNone;
  }
  bool stopped() const { return stop_ != StopReason::kNone; }
  StopReason reason() const { return stop_; }

 private:
  Clock::time_point deadline_ = Clock::time_point::max();
  const std::atomic<bool>* cancel_ = nullptr;
  uint64_t work_ = 0, next_ = kUnits;
  StopReason stop_ = StopReason::kNone;
};

// std::sort, or std::stable_sort when `stable`, that gives up (returns false, the range then in
// some order) once `poll` says stop. Up to kSortAtOnce elements it is exactly the std call;
// above, it sorts runs of kSortAtOnce and merges them pairwise (stably), polling between merges,
// so no piece of it runs for more than a few milliseconds. Elements equal under `less` may then
// end up in another order than std::sort would give them (never for `stable`).
inline constexpr size_t kSortAtOnce = size_t{1} << 15;
template <class T, class Less>
bool sort_polled(std::span<T> v, Less less, Poll& poll, bool stable = false) {
  const size_t n = v.size();
  if (n <= kSortAtOnce) {
    if (stable)
      std::stable_sort(v.begin(), v.end(), less);
    else
      std::sort(v.begin(), v.end(), less);
    return !poll.tick(n * 4);
  }
  for (size_t i = 0; i < n; i += kSortAtOnce) {
    auto b = v.begin() + i, e = v.begin() + std::min(n, i + kSortAtOnce);
    if (stable)
      std::stable_sort(b, e, less);
    else
      std::sort(b, e, less);
    if (poll.tick(kSortAtOnce * 16)) return false;
  }
  for (size_t w = kSortAtOnce; w < n; w *= 2) {
    for (size_t i = 0; i + w < n; i += 2 * w) {
      auto b = v.begin() + i, m = b + w, e = v.begin() + std::min(n, i + 2 * w);
      std::inplace_merge(b, m, e, less);
      if (poll.tick(static_cast<uint64_t>(e - b))) return false;
    }
  }
  return true;
}

}  // namespace dmrt::check_detail
