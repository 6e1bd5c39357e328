// Chime under threads x fibers on two compute nodes: zipfian mixed ops vs acknowledged writes.
#include <gtest/gtest.h>

#include "../runtime/test_cluster.h"
#include "../sherman/byte_keys.h"
#include "../sherman/kv_checks.h"
#include "dmrt/indexes/chime/chime.h"

namespace dmrt {
namespace {

using CTree = chime::Tree<ShmTransport>;

struct Ctx {
  testing::ShmClient client;
  CTree::Handle handle;
  Ctx(std::shared_ptr<shm::Pool> p, NodeId home, uint32_t id, const std::shared_ptr<CTree>& t)
      : client(shm::Endpoint(p, home, id)), handle(t->handle(client)) {}
};

void run_stress(chime::Options o, testing::StressConfig cfg) {
  auto pool = testing::small_pool(1, 2, uint64_t{256} << 20);
  auto cns = pool->config().compute_nodes();
  testing::ShmClient c0(shm::Endpoint(pool, cns[0], 500));
  testing::ShmClient c1(shm::Endpoint(pool, cns[1], 501));
  auto t0 = CTree::create(c0, o);
  auto t1 = CTree::attach(c1, o);  // second compute node: own cache and lock table
  auto logs = testing::stress_run(cfg, [&](const WorkerId& w) {
    bool second = w.thread % 2 == 1;
    return std::make_unique<Ctx>(pool, cns[second], w.index, second ? t1 : t0);
  });
  auto h = t0->handle(c0);
  EXPECT_EQ(testing::final_state_error(h, logs, cfg.key_space), "");
  auto s = t0->stats();
  EXPECT_GT(s["leaf_splits"] + t1->stats()["leaf_splits"], 10);
  std::printf("chime stress: height %.0f, read retries %.0f, sibling moves %.0f, spec hits %.0f\n",
              s["height"], s["read_retries"], s["sibling_moves"], s["speculative_hits"]);
}

TEST(ChimeConcurrency, ZipfianMixedOpsWithSplits) {
  chime::Options o;
  o.span = 16;
  o.neighborhood = 4;
  o.internal_span = 6;
  o.hotspot_bytes = 1 << 16;
  run_stress(o, {});
}

TEST(ChimeConcurrency, DefaultGeometryManyFibers) {
  chime::Options o;
  o.hotspot_bytes = 1 << 18;
  testing::StressConfig cfg;
  cfg.fibers = 8;
  cfg.ops_per_worker = 1000;
  cfg.key_space = 4000;
  run_stress(o, cfg);
}

// CHIME-Indirect (§4.5): entries point to KV blocks, updates write new blocks out of place.
TEST(ChimeConcurrency, IndirectItemsWithSplits) {
  chime::Options o;
  o.span = 16;
  o.neighborhood = 4;
  o.internal_span = 6;
  o.hotspot_bytes = 1 << 16;
  o.indirect = true;
  run_stress(o, {});
}

TEST(ChimeConcurrency, AllTechniquesOffTinyCache) {
  chime::Options o;
  o.span = 16;
  o.neighborhood = 4;
  o.internal_span = 4;
  o.cache_bytes = 2000;
  o.hopscotch_leaf = false;
  o.vacancy_piggyback = false;
  o.metadata_replication = false;
  o.speculative_read = false;
  run_stress(o, {});
}

// Sibling-based validation off: reads route by the fence keys of the replicas; a tiny cache
// keeps cached parents stale.
TEST(ChimeConcurrency, FenceKeysTinyCache) {
  chime::Options o;
  o.span = 16;
  o.neighborhood = 4;
  o.internal_span = 6;
  o.cache_bytes = 3000;
  o.hotspot_bytes = 1 << 16;
  o.sibling_validation = false;
  run_stress(o, {});
}

// Threads x fibers on two compute nodes over 40-byte keys sharing a 30-byte prefix (the integer
// stress run through the order-preserving byte form): acknowledged writes vs the end state.
struct KeysCtx {
  testing::ShmClient client;
  testing::BytesAsInt<CTree::Handle> handle;
  KeysCtx(std::shared_ptr<shm::Pool> p, NodeId home, uint32_t id, const std::shared_ptr<CTree>& t,
          const std::string& prefix)
      : client(shm::Endpoint(p, home, id)), handle{t->handle(client), prefix, {}} {}
};

void run_keys_stress(chime::Options o) {
  const std::string prefix = std::string(12, 'p') + std::string(18, '\0');
  auto pool = testing::small_pool(1, 2, uint64_t{256} << 20);
  auto cns = pool->config().compute_nodes();
  testing::ShmClient c0(shm::Endpoint(pool, cns[0], 500));
  testing::ShmClient c1(shm::Endpoint(pool, cns[1], 501));
  auto t0 = CTree::create(c0, o);
  auto t1 = CTree::attach(c1, o);
  testing::StressConfig cfg;
  cfg.ops_per_worker = 3000;
  auto logs = testing::stress_run(cfg, [&](const WorkerId& w) {
    bool second = w.thread % 2 == 1;
    return std::make_unique<KeysCtx>(pool, cns[second], w.index, second ? t1 : t0, prefix);
  });
  testing::BytesAsInt<CTree::Handle> h{t0->handle(c0), prefix, {}};
  EXPECT_EQ(testing::final_state_error(h, logs, cfg.key_space), "");
  EXPECT_GT(t0->stats()["leaf_splits"] + t1->stats()["leaf_splits"], 10);
}

TEST(ChimeConcurrency, ByteKeysWithSplits) {
  chime::Options o;
  o.key_size = 40;
  o.span = 16;
  o.neighborhood = 4;
  o.internal_span = 6;
  o.hotspot_bytes = 1 << 16;
  run_keys_stress(o);
  o.sibling_validation = false;  // fence keys of 41 bytes (the max+1 separator) in the replicas
  run_keys_stress(o);
}

#ifdef DMRT_FAULT_INJECTION
// The checker must fail when the index lies: inserts acknowledged without being written.
TEST(ChimeConcurrency, CheckerCatchesLostInserts) {
  chime::Options o;
  o.faults.ack_without_write = true;
  auto pool = testing::small_pool(1, 1, uint64_t{64} << 20);
  testing::ShmClient c(shm::Endpoint(pool, pool->config().compute_nodes()[0], 0));
  auto t = CTree::create(c, o);
  auto h = t->handle(c);
  testing::WorkerLog log;
  for (Key k = 1; k < 50; ++k)
    if (h.insert(k, testing::value_for(k, 0, 0)))
      log.written[k].insert(testing::value_for(k, 0, 0));
  std::string err = testing::final_state_error(h, std::vector<testing::WorkerLog>{log}, 100);
  EXPECT_NE(err.find("missing"), std::string::npos) << err;
}
#endif

}  // namespace
}  // namespace dmrt
