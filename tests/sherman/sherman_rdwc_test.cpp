// Sherman with read delegation and write combining (options.h `rdwc`, off by default: the Sherman
// paper has none; the CHIME paper applies it) on sim: a hot key on every client of a compute node.
#include <gtest/gtest.h>

#include "../common/rdwc_hot_key.h"
#include "dmrt/indexes/sherman/sherman.h"

namespace dmrt {
namespace {

using ShermanSimTree = sherman::Tree<SimTransport>;

testing::HotKeyFigures sherman_hot_key(bool rdwc, unsigned nodes, bool updates) {
  return testing::hot_key_run<ShermanSimTree>(
      nodes, 8, updates, 40, [rdwc](std::vector<sim::SimClient*>& s) {
        sherman::Options o;
        o.rdwc = rdwc;
        std::vector<std::shared_ptr<ShermanSimTree>> t;
        for (size_t i = 0; i < s.size(); ++i)
          t.push_back(i == 0 ? ShermanSimTree::create(*s[0], o) : ShermanSimTree::attach(*s[i], o));
        return t;
      });
}

TEST(ShermanRdwc, DefaultIsOff) {
  EXPECT_FALSE(sherman::Options{}.rdwc);
}

// Two compute nodes x 8 clients x 40 searches of one key.
TEST(ShermanRdwc, HotKeySearchesShareOneRead) {
  auto on = sherman_hot_key(true, 2, false), off = sherman_hot_key(false, 2, false);
  EXPECT_EQ(on, sherman_hot_key(true, 2, false));  // deterministic
  expect_rdwc_figures(on, off, false);
}

// One compute node x 8 clients x 40 updates of one key: one remote update at a time.
TEST(ShermanRdwc, HotKeyUpdatesCombine) {
  auto on = sherman_hot_key(true, 1, true), off = sherman_hot_key(false, 1, true);
  EXPECT_EQ(on, sherman_hot_key(true, 1, true));
  expect_rdwc_figures(on, off, true);
}

}  // namespace
}  // namespace dmrt
