// ROLEX with read delegation and write combining (options.h `rdwc`, off by default: the ROLEX
// paper has none; the CHIME paper applies it) on sim: a hot key on every client of a compute node.
// One Index serves every compute node, with one combiner per node.
#include <gtest/gtest.h>

#include <algorithm>

#include "../common/rdwc_hot_key.h"
#include "dmrt/indexes/rolex/rolex.h"

namespace dmrt {
namespace {

using RolexSimIndex = rolex::Index<SimTransport>;

testing::HotKeyFigures rolex_hot_key(bool rdwc, unsigned nodes, bool updates) {
  return testing::hot_key_run<RolexSimIndex>(
      nodes, 8, updates, 40, [rdwc](std::vector<sim::SimClient*>& s) {
        rolex::Options o;
        o.rdwc = rdwc;
        o.lock_sharing = false;  // RDWC alone (lock sharing: rolex_lock_sharing_test.cpp)
        o.compute_retrain_fallback = true;  // no retraining service here
        o.full_slt_wait_ns = 0;
        // Bulk keys between the test's keys (key_of_rank(0..63) are inserted afterwards).
        std::vector<Key> bulk;
        for (size_t r = 0; r < 2000; ++r) bulk.push_back(testing::key_of_rank(r + 1000) + 1);
        std::sort(bulk.begin(), bulk.end());
        auto x = RolexSimIndex::create(*s[0], o, bulk);
        return std::vector<std::shared_ptr<RolexSimIndex>>(s.size(), x);
      });
}

TEST(RolexRdwc, DefaultIsOff) {
  EXPECT_FALSE(rolex::Options{}.rdwc);
}

// Two compute nodes x 8 clients x 40 searches of one key.
TEST(RolexRdwc, HotKeySearchesShareOneRead) {
  auto on = rolex_hot_key(true, 2, false), off = rolex_hot_key(false, 2, false);
  EXPECT_EQ(on, rolex_hot_key(true, 2, false));  // deterministic
  expect_rdwc_figures(on, off, false);
}

// One compute node x 8 clients x 40 updates of one key: one remote update at a time.
TEST(RolexRdwc, HotKeyUpdatesCombine) {
  auto on = rolex_hot_key(true, 1, true), off = rolex_hot_key(false, 1, true);
  EXPECT_EQ(on, rolex_hot_key(true, 1, true));
  expect_rdwc_figures(on, off, true);
}

}  // namespace
}  // namespace dmrt
