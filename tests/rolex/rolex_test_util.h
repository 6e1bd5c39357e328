// ROLEX test helpers: pool setup, per-operation round-trip measurement, a retraining geometry.
#pragma once

#include <memory>

#include "../runtime/test_cluster.h"
#include "dmrt/indexes/rolex/rolex.h"

namespace dmrt::testing {

using RIndex = rolex::Index<ShmTransport>;

// Round trips of one call of f on client c.
template <class F>
uint64_t rtts(ShmClient& c, F&& f) {
  uint64_t before = c.counters().total.round_trips;
  f();
  return c.counters().total.round_trips - before;
}

// Leaves of 8 slots, an error bound of 8 and a retraining threshold of 16 synonym slots over a
// 2^50 key space: an index grown from few keys retrains within a few thousand inserts.
inline rolex::Options small_retraining_options(uint32_t initial_groups) {
  rolex::Options o;
  o.leaf_slots = 8;
  o.epsilon = 8;
  o.initial_groups = initial_groups;
  o.key_space = uint64_t{1} << 50;
  o.retrain_threshold = 16;
  return o;
}

}  // namespace dmrt::testing
