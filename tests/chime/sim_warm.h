// A CHIME tree of 20,000 keys on a one-client simulated cluster, its internal-node cache warm:
// the fixture of the tests that count one operation's verbs and bytes.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "../sherman/kv_checks.h"
#include "../sim/small_cluster.h"
#include "dmrt/indexes/chime/chime.h"

namespace dmrt::testing {

// sim applies a round trip's verbs at one instant, so its READs are line-atomic.
struct ChimeSimWarm {
  using Tree = chime::Tree<SimTransport>;
  static constexpr size_t n = 20000;
  sim::Cluster cluster{sim::small_test_cluster(1, 1)};
  sim::SimClient c = sim::untimed_setup_client(cluster);
  std::shared_ptr<Tree> t;
  std::unique_ptr<Tree::Handle> h;

  // Inserts key_of_rank(0 .. n) with value(key), then searches each once.
  explicit ChimeSimWarm(
      const chime::Options& o,
      const std::function<std::string(Key)>& value = [](Key k) { return value_for(k, 0, 0); }) {
    t = Tree::create(c, o);
    h = std::make_unique<Tree::Handle>(t->handle(c));
    for (size_t i = 0; i < n; ++i) EXPECT_TRUE(h->insert(key_of_rank(i), value(key_of_rank(i))));
    std::string v;
    for (size_t i = 0; i < n; ++i) h->search(key_of_rank(i), v);
  }
  // The verbs, bytes and round trips fn() cost.
  template <class F>
  VerbCounters measure(F&& fn) {
    VerbCounters before = c.counters().total;
    fn();
    return c.counters().total - before;
  }
};

}  // namespace dmrt::testing
