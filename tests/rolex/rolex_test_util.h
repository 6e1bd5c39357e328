// ROLEX test helpers: pool setup, per-operation round-trip measurement.
#pragma once

#include <memory>

#include "../runtime/test_cluster.h"
#include "indexes/rolex/prebuilt.h"

namespace dmrt::testing {

using RIndex = rolex::Index<ShmTransport>;

// Round trips of one call of f on client c.
template <class F>
uint64_t rtts(ShmClient& c, F&& f) {
  uint64_t before = c.counters().total.round_trips;
  f();
  return c.counters().total.round_trips - before;
}

}  // namespace dmrt::testing
