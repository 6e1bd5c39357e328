// The byte-key suites (tests/harness/bytes_suites.h) on every index that takes byte keys: RACE,
// SMART, Sherman, DMTree and CHIME, at key_size 8, 32 and 256, on shm and sim (single client: edge
// cases and the differential run), and their linearizability under threads x fibers on shm (32 and
// 256).
#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

#include "dmrt/indexes/chime/chime.h"
#include "dmrt/indexes/dmtree/dmtree.h"
#include "dmrt/indexes/race/race.h"
#include "dmrt/indexes/sherman/sherman.h"
#include "dmrt/indexes/smart/smart.h"
#include "tests/harness/bytes_suites.h"
#include "tests/runtime/test_cluster.h"
#if DMRT_TRANSPORT_SIM
#include "tests/sim/small_cluster.h"
#endif

namespace dmrt::harness {
namespace {

constexpr size_t kTreeValue = 32;  // the trees store values inline in value_size slots

race::Options race_bytes(size_t key_size) {
  race::Options o;
  o.value_size = 128;
  o.key_size = static_cast<uint32_t>(key_size);
  o.initial_global_depth = 1;
  o.groups_per_subtable = 64;  // small subtables: the runs split them, rehashing byte keys
  return o;
}
smart::Options smart_bytes(size_t key_size) {
  smart::Options o;
  o.value_size = kTreeValue;
  o.key_size = static_cast<uint32_t>(key_size);
  return o;
}
sherman::Options sherman_bytes(size_t key_size) {
  sherman::Options o;
  o.value_size = kTreeValue;
  o.leaf_span = 8;  // small nodes: splits of leaves and internal nodes carry long separators
  o.internal_span = 6;
  o.key_size = static_cast<uint32_t>(key_size);
  return o;
}

// DMTree: one Tree per compute node; these clusters have one compute node, so one Tree (created
// through the first client) serves every client (all homed there).
dmtree::Options dmtree_bytes(size_t key_size) {
  dmtree::Options o;
  o.value_size = kTreeValue;
  o.leaf_span = 8;  // small leaves: splits and merges move long keys and fences
  o.internal_span = 6;
  o.key_size = static_cast<uint32_t>(key_size);
  return o;
}

chime::Options chime_bytes(size_t key_size) {
  chime::Options o;
  o.value_size = kTreeValue;
  o.span = 16;  // small leaves and nodes: leaf and internal splits publish long separators
  o.neighborhood = 4;
  o.internal_span = 6;
  o.hotspot_bytes = 1 << 16;
  o.key_size = static_cast<uint32_t>(key_size);
  return o;
}

BytesSuiteOptions suite_options(size_t key_size, bool tree) {
  BytesSuiteOptions o;
  o.ops = 5000;
  o.seed = 7 + key_size;
  if (tree) o.min_value = o.max_value = kTreeValue;
  return o;
}

// Every index at every key size; fresh() gives a client of a new cluster for each index made (the
// trees' lock tables take a memory node's device memory, so each index gets its own).
template <Transport T, class Fresh>
void all_indexes(Fresh fresh) {
  for (size_t ks : {size_t{8}, size_t{32}, size_t{256}}) {
    SCOPED_TRACE("key_size " + std::to_string(ks));
    {
      SCOPED_TRACE("race");
      byte_key_suites(
          [&] {
            auto& c = fresh();
            auto i = race::RaceIndex<T>::create(c, race_bytes(ks));
            return keep(i, i->handle(c));
          },
          ks, suite_options(ks, false));
    }
    {
      SCOPED_TRACE("smart");
      byte_key_suites(
          [&] {
            auto& c = fresh();
            auto t = smart::Tree<T>::create(c, smart_bytes(ks));
            return keep(t, t->handle(c));
          },
          ks, suite_options(ks, true));
    }
    {
      SCOPED_TRACE("sherman");
      byte_key_suites(
          [&] {
            auto& c = fresh();
            auto t = sherman::Tree<T>::create(c, sherman_bytes(ks));
            return keep(t, t->handle(c));
          },
          ks, suite_options(ks, true));
    }
    {
      SCOPED_TRACE("dmtree");
      byte_key_suites(
          [&] {
            auto& c = fresh();
            auto t = dmtree::Tree<T>::create(c, dmtree_bytes(ks));
            return keep(t, t->handle(c));
          },
          ks, suite_options(ks, true));
    }
    {
      SCOPED_TRACE("chime");
      byte_key_suites(
          [&] {
            auto& c = fresh();
            auto t = chime::Tree<T>::create(c, chime_bytes(ks));
            return keep(t, t->handle(c));
          },
          ks, suite_options(ks, true));
    }
  }
}

TEST(IndexBytes, SuitesOnShm) {
  std::vector<std::pair<std::shared_ptr<shm::Pool>, std::unique_ptr<ShmClient>>> made;
  all_indexes<ShmTransport>([&]() -> ShmClient& {
    auto pool = testing::small_pool(1, 1, uint64_t{64} << 20);
    auto c = std::make_unique<ShmClient>(shm::Endpoint(pool, pool->config().compute_nodes()[0], 0));
    made.emplace_back(std::move(pool), std::move(c));
    return *made.back().second;
  });
}

#if DMRT_TRANSPORT_SIM
TEST(IndexBytes, SuitesOnSim) {
  std::vector<std::pair<std::unique_ptr<sim::Cluster>, std::unique_ptr<sim::SimClient>>> made;
  all_indexes<SimTransport>([&]() -> sim::SimClient& {
    sim::Options so = sim::small_test_cluster(1, 1);
    so.memory_bytes = uint64_t{64} << 20;
    auto cluster = std::make_unique<sim::Cluster>(so);
    auto c = std::make_unique<sim::SimClient>(
        cluster->endpoint(cluster->compute_nodes()[0], 999));  // untimed, as untimed_setup_client
    made.emplace_back(std::move(cluster), std::move(c));
    return *made.back().second;
  });
}
#endif

// Threads x fibers on one shared index, zipfian over a pool of byte keys: the history must be
// linearizable (scans included for the trees).
template <class Make>
void stress(size_t key_size, bool tree, Make make) {
  auto pool = testing::small_pool(1, 1, uint64_t{1} << 30);
  auto setup = testing::make_client(pool, 1000);
  auto idx = make(setup);
  StressOptions so;
  so.keys = 256;
  so.threads = 2;
  so.fibers = 8;
  so.ops_per_worker = 800;
  so.seed = key_size;
  if (tree) so.value_bytes = kTreeValue;
  auto out = byte_key_stress_test(
      pool, [&](ShmClient& c) { return idx->handle(c); }, key_size, so);
  if (tree) {
    EXPECT_GT(out.result.scans_checked, 0u);
  }
}

TEST(IndexBytesStress, LinearizableWithByteKeys) {
  for (size_t ks : {size_t{32}, size_t{256}}) {
    SCOPED_TRACE("key_size " + std::to_string(ks));
    stress(ks, false,
           [&](ShmClient& c) { return race::RaceIndex<ShmTransport>::create(c, race_bytes(ks)); });
    stress(ks, true,
           [&](ShmClient& c) { return smart::Tree<ShmTransport>::create(c, smart_bytes(ks)); });
    stress(ks, true,
           [&](ShmClient& c) { return sherman::Tree<ShmTransport>::create(c, sherman_bytes(ks)); });
    stress(ks, true,
           [&](ShmClient& c) { return dmtree::Tree<ShmTransport>::create(c, dmtree_bytes(ks)); });
    stress(ks, true,
           [&](ShmClient& c) { return chime::Tree<ShmTransport>::create(c, chime_bytes(ks)); });
  }
}

}  // namespace
}  // namespace dmrt::harness
