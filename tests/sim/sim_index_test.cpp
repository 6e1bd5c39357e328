// A real index on the sim transport: Sherman's B+-tree, instantiated with SimTransport, with many
// simulated clients inserting and searching concurrently in virtual time.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../sherman/kv_checks.h"
#include "dmrt/indexes/sherman/sherman.h"
#include "dmrt/policies/sim/cluster.h"
#include "small_cluster.h"

namespace dmrt::sim {
namespace {

using STree = sherman::Tree<SimTransport>;

struct Result {
  uint64_t end_ns = 0;
  uint64_t round_trips = 0;
  std::string report;
  bool operator==(const Result&) const = default;
};

Result insert_and_search(unsigned per_client) {
  Options o = small_test_cluster(4, 8);
  Cluster cluster(o);
  SimClient setup = untimed_setup_client(cluster);
  sherman::Options so;
  so.leaf_span = 16;
  so.internal_span = 8;
  auto tree = STree::create(setup, so);
  cluster.reset_stats();
  std::vector<unsigned> found(o.clients());
  cluster.run([&](SimClient& c, const WorkerInfo& w) {
    auto h = tree->handle(c);
    for (unsigned i = 0; i < per_client; ++i) {
      Key k = testing::key_of_rank(w.index * per_client + i);
      ASSERT_TRUE(h.insert(k, testing::value_for(k, w.index, i)));
    }
    std::string v;
    for (unsigned i = 0; i < per_client; ++i) {
      Key k = testing::key_of_rank(w.index * per_client + i);
      if (h.search(k, v) && v == testing::value_for(k, w.index, i)) ++found[w.index];
    }
  });
  for (unsigned i = 0; i < o.clients(); ++i) EXPECT_EQ(found[i], per_client) << "client " << i;
  // Every key is visible afterwards, read untimed.
  auto h = tree->handle(setup);
  std::string v;
  for (unsigned r = 0; r < o.clients() * per_client; ++r)
    EXPECT_TRUE(h.search(testing::key_of_rank(r), v)) << r;
  Report rep = cluster.report();
  EXPECT_GT(rep.elapsed_ns, 0u);
  return {cluster.now_ns(), cluster.last_counters().total.round_trips, rep.describe()};
}

TEST(SimIndex, ShermanConcurrentInsertsInVirtualTimeAreDeterministic) {
  Result a = insert_and_search(150);
  Result b = insert_and_search(150);
  EXPECT_EQ(a, b);
  EXPECT_GT(a.round_trips, 32u * 150u * 2u);
}

}  // namespace
}  // namespace dmrt::sim
