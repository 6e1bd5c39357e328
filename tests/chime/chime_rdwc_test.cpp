// CHIME's read delegation and write combining (options.h `rdwc`, on by default as in the CHIME
// paper) on sim: a hot key searched or updated by every client of a compute node.
#include <gtest/gtest.h>

#include "../common/rdwc_hot_key.h"
#include "dmrt/indexes/chime/chime.h"

namespace dmrt {
namespace {

using ChimeSimTree = chime::Tree<SimTransport>;

testing::HotKeyFigures chime_hot_key(bool rdwc, unsigned nodes, bool updates) {
  return testing::hot_key_run<ChimeSimTree>(
      nodes, 8, updates, 40, [rdwc](std::vector<sim::SimClient*>& s) {
        chime::Options o;
        o.rdwc = rdwc;
        std::vector<std::shared_ptr<ChimeSimTree>> t;
        for (size_t i = 0; i < s.size(); ++i)
          t.push_back(i == 0 ? ChimeSimTree::create(*s[0], o) : ChimeSimTree::attach(*s[i], o));
        return t;
      });
}

TEST(ChimeRdwc, DefaultIsOn) {
  EXPECT_TRUE(chime::Options{}.rdwc);
}

// Two compute nodes x 8 clients x 40 searches of one key.
TEST(ChimeRdwc, HotKeySearchesShareOneRead) {
  auto on = chime_hot_key(true, 2, false), off = chime_hot_key(false, 2, false);
  EXPECT_EQ(on, chime_hot_key(true, 2, false));  // deterministic
  EXPECT_EQ(on.solo_round_trips, 1u);            // the speculative entry READ
  expect_rdwc_figures(on, off, false);
}

// One compute node x 8 clients x 40 updates of one key: one remote update at a time.
TEST(ChimeRdwc, HotKeyUpdatesCombine) {
  auto on = chime_hot_key(true, 1, true), off = chime_hot_key(false, 1, true);
  EXPECT_EQ(on, chime_hot_key(true, 1, true));
  EXPECT_EQ(on.solo_round_trips, 3u);  // masked CAS; READ neighborhood; WRITE entry + unlock
  expect_rdwc_figures(on, off, true);
}

}  // namespace
}  // namespace dmrt
