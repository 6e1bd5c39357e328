// Flush points: where an index's port to non-coherent memory flushes (docs/cxl-porting.md,
// "Coherence"), each a named point whose hint a test can switch off.
#pragma once

#include <cstdint>

#include "dmrt/indexes/common/faults.h"
#include "dmrt/runtime/verbs.h"

namespace dmrt {

// A set of one index's flush points. `Point` is the index's enum class FlushPoint, numbered from
// 0 (at most 32 points). Used as the test-only fault switch Options::faults.skip_flush: the
// points it holds issue no hint, so that a test proves each of them needed (tests/coherence).
template <class Point>
class FlushPoints {
 public:
  constexpr FlushPoints() = default;
  constexpr explicit FlushPoints(Point p) { add(p); }
  constexpr FlushPoints& add(Point p) {
    bits_ |= uint32_t{1} << static_cast<unsigned>(p);
    return *this;
  }
  constexpr bool has(Point p) const { return (bits_ >> static_cast<unsigned>(p)) & 1; }
  constexpr bool empty() const { return bits_ == 0; }

 private:
  uint32_t bits_ = 0;
};

// The hint flush point `p` issues: `h`, unless the fault switch `skipped` removed the point (only
// in builds with DMRT_FAULT_INJECTION; elsewhere the switch is compiled out).
template <class Point>
constexpr FlushHint flush_hint(const FlushPoints<Point>& skipped, Point p, FlushHint h) {
  return injected(skipped.has(p)) ? FlushHint::kNone : h;
}

}  // namespace dmrt
