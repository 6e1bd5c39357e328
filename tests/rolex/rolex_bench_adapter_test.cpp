// The dmrt-bench adapter of ROLEX (DmAdapter over bench/indexes/rolex_run.h's run spec): by
// default the load phase's keys are bulk loaded at creation, as the paper loads before its
// workloads; the option loads them by inserts instead. On shm and on sim.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/indexes/adapter.h"
#include "bench/indexes/rolex_run.h"
#include "bench/indexes/spec.h"
#include "bench/workload/keysets.h"
#include "tests/runtime/test_cluster.h"
#if DMRT_TRANSPORT_SIM
#include "dmrt/policies/sim/cluster.h"
#endif

namespace dmrt::bench {
namespace {

// The flags as a command line would give them: the bench's defaults, then `edit`.
class GivenRolexFlags final : public FlagResolver<rolex::Options> {
 public:
  explicit GivenRolexFlags(std::function<void(rolex::Options&)> edit = {})
      : edit_(std::move(edit)) {}
  rolex::Options defaults() const override { return rolex::Options{}; }
  rolex::Options resolve(rolex::Options base, const IndexOptions&) const override {
    if (edit_) edit_(base);
    return base;
  }
  void describe(nlohmann::json&, const rolex::Options&) const override {}

 private:
  std::function<void(rolex::Options&)> edit_;
};

std::string rolex_bench_value(Key k) {
  std::string v(8, '\0');
  const Key x = k ^ 0x5a5a5a5a5a5a5a5aull;
  std::memcpy(v.data(), &x, 8);
  return v;
}

// A bulk-loaded creation: what dmrt-bench's load phase measures (bench/driver/runner.h). 20,000
// lognormal keys in 1,250 full leaves of 272 B: 17 B of leaves written per key, plus the models (an
// LT entry, a boundary and the 2 KiB SLT per group), in about a hundred WRITEs: no round trip per
// key. Every key is then found with its load value, and nothing went through a synonym leaf.
template <Transport T>
void rolex_bench_bulk_load(Client<T>& setup, Client<T>& c) {
  using A = DmAdapter<RolexRun, T>;
  const auto keys = make_keyset(KeyDist::kLognormal, 20000, 9);
  IndexOptions io;
  io.value_size = 8;
  io.expected_keys = 2 * keys.size();
  const GivenRolexFlags defaults;
  ASSERT_TRUE(A::bulk_loads(io, defaults));  // the paper's load is the bench's default
  EXPECT_EQ(A::describe(io, defaults)["bulk_load"], true);
  const GivenRolexFlags inserts([](rolex::Options& o) { o.bulk_load = false; });
  EXPECT_FALSE(A::bulk_loads(io, inserts));
  EXPECT_EQ(A::describe(io, inserts)["bulk_load"], false);

  BulkLoad load;
  load.keys = keys;
  load.value_of = rolex_bench_value;
  io.bulk_load = &load;
  const VerbCounters before = setup.counters().total;
  auto idx = A::create(setup, io, defaults);
  const VerbCounters cost = setup.counters().total - before;
  const double n = double(keys.size());
  std::printf("bulk load of %zu keys: %.4f round trips, %.1f B written, %.2f B read per key\n",
              keys.size(), cost.round_trips / n, cost.bytes_written / n, cost.bytes_read / n);
  // Leaves 64 KiB per WRITE (6 for 340 KB), a few writes per group's model, the tables.
  EXPECT_LT(cost.round_trips, keys.size() / 100);
  EXPECT_GE(cost.bytes_written, keys.size() * 17);
  EXPECT_LE(cost.bytes_written, keys.size() * 24);
  IndexStats s = A::stats(*idx, setup);
  EXPECT_EQ(s["synonym_leaves"], 0);
  EXPECT_EQ(s["leaves"], double(keys.size() / 16));
  EXPECT_GT(s["groups"], 10);

  auto h = A::handle(*idx, c);
  std::string out;
  for (Key k : keys) {
    ASSERT_TRUE(h.search(k, out)) << k;
    ASSERT_EQ(out, rolex_bench_value(k)) << k;
  }
  s = A::stats(*idx, setup);
  EXPECT_EQ(s["upper_misses"], 0);
  EXPECT_EQ(s["model_misses"], 0);
  EXPECT_EQ(s["table_refreshes"], 0);
}

TEST(RolexBenchAdapter, BulkLoadsByDefaultShm) {
  auto pool = testing::small_pool(2, 1, uint64_t{64} << 20);
  auto setup = testing::make_client(pool, 100);
  auto c = testing::make_client(pool, 1);
  rolex_bench_bulk_load<ShmTransport>(setup, c);
}

#if DMRT_TRANSPORT_SIM
TEST(RolexBenchAdapter, BulkLoadsByDefaultSim) {
  sim::Options o = sim::Options::preset("rdma-cx6");
  o.memory_bytes = uint64_t{64} << 20;
  sim::Cluster cluster(o);
  cluster.run([&](sim::SimClient& c, const sim::WorkerInfo&) {
    sim::SimClient setup(cluster.endpoint(cluster.compute_nodes()[0], 100));
    rolex_bench_bulk_load<SimTransport>(setup, c);
  });
}
#endif

}  // namespace
}  // namespace dmrt::bench
