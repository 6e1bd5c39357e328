// RACE with 32 B and 256 B byte keys checked for linearizability: the harness's stress suite on
// shm (interleaved fibers) and many lock-step clients on sim. The history names each key by the
// integer it was made from (user_key is injective), the index sees only the long byte keys.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "dmrt/check/history.h"
#include "dmrt/check/linearizability.h"
#include "race_test_util.h"
#include "tests/harness/kv_suites.h"
#if DMRT_TRANSPORT_SIM
#include "dmrt/policies/sim/cluster.h"
#endif

namespace dmrt::race {
namespace {

// A RACE handle driven through integer keys that reach it as user_key(k, len): len-byte keys that
// share all but their last digits.
template <class H>
class LongKeyHandle {
 public:
  LongKeyHandle(H h, size_t len) : h_(std::move(h)), len_(len) {}
  bool search(Key k, std::string& out) { return h_.search(KeyView(key(k)), out); }
  bool insert(Key k, std::string_view v) { return h_.insert(KeyView(key(k)), v); }
  bool update(Key k, std::string_view v) { return h_.update(KeyView(key(k)), v); }
  bool remove(Key k) { return h_.remove(KeyView(key(k))); }

 private:
  const std::string& key(Key k) {
    key_ = testing::user_key(k, len_);
    return key_;
  }
  H h_;
  size_t len_;
  std::string key_;
};

Options long_key_options(uint32_t key_size) {
  Options o;
  o.key_size = key_size;
  o.value_size = 64;
  o.initial_global_depth = 0;
  o.groups_per_subtable = 8;  // splits happen during the runs
  return o;
}

class RaceBytesLinearizable : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RaceBytesLinearizable, ShmStressIsLinearizable) {
  const uint32_t len = GetParam();
  auto p = testing::pool();  // fibers yield after every round trip
  std::shared_ptr<testing::ShmIndex> idx;
  {
    auto c = testing::client(p, 1000);
    idx = testing::ShmIndex::create(c, long_key_options(len));
  }
  harness::StressOptions o;
  o.threads = 2;
  o.fibers = 8;
  o.keys = 512;
  o.ops_per_worker = 1500;
  o.mix = {30, 30, 20, 20, 0};
  o.seed = len;
  auto out = harness::stress_test(
      p,
      [&](testing::ShmClient& c) {
        return LongKeyHandle<testing::ShmIndex::Handle>(idx->handle(c), len);
      },
      o);
  auto c = testing::client(p, 1001);
  EXPECT_GT(idx->stats(c).at("resizes"), 0.0);
  for (const Item& it : idx->items(c)) EXPECT_EQ(it.key_str.size(), len);
}

#if DMRT_TRANSPORT_SIM
// 4 x 8 clients on the simulated cluster, every verb interleaved in virtual time, over 32 hot
// keys; the history's times are virtual, from one clock.
TEST_P(RaceBytesLinearizable, SimStressIsLinearizable) {
  const uint32_t len = GetParam();
  sim::Options so = sim::Options::preset("rdma-cx6");
  so.compute_nodes = 4;
  so.clients_per_node = 8;
  so.memory_bytes = uint64_t{256} << 20;
  sim::Cluster cluster(so);
  sim::SimClient setup(cluster.endpoint(cluster.compute_nodes()[0], 999));
  auto idx = RaceIndex<SimTransport>::create(setup, long_key_options(len));
  constexpr size_t kOps = 400;
  std::vector<HistoryRecorder> recs(so.compute_nodes * so.clients_per_node);
  cluster.run([&](sim::SimClient& c, const sim::WorkerInfo& w) {
    LongKeyHandle h(idx->handle(c), len);
    HistoryRecorder rec(w.index, kOps, ValueMode::kFull);
    std::mt19937_64 rng(len * 1000 + w.index);
    std::string out;
    for (size_t i = 0; i < kOps; ++i) {
      Key k = rng() % 32;
      std::string v = harness::make_value(w.index, i, 24);
      uint64_t a = w.now_ns();
      switch (rng() % 4) {
        case 0: {
          bool f = h.search(k, out);
          rec.search(k, f, out, a, w.now_ns());
          break;
        }
        case 1: {
          bool ok = h.insert(k, v);
          rec.insert(k, v, ok, a, w.now_ns());
          break;
        }
        case 2: {
          bool ok = h.update(k, v);
          rec.update(k, v, ok, a, w.now_ns());
          break;
        }
        default: {
          bool ok = h.remove(k);
          rec.remove(k, ok, a, w.now_ns());
        }
      }
    }
    recs[w.index] = std::move(rec);
  });
  History hist = merge_histories(recs);
  EXPECT_EQ(hist.size(), recs.size() * kOps);
  CheckResult r = check_history(hist);
  EXPECT_TRUE(r.linearizable) << r.explain();
  std::printf("[ sim      ] %zu ops by %zu clients, %u B keys: %s\n", hist.size(), recs.size(), len,
              to_string(r.verdict));
}
#endif

#ifdef DMRT_FAULT_INJECTION
// The same shm run catches a wrong index: a remove that reports success without its CAS.
TEST(RaceBytesLinearizableFaults, DeleteSkipsCasIsAViolation) {
  auto p = testing::pool();
  Options ro = long_key_options(256);
  ro.faults.delete_skips_cas = true;
  std::shared_ptr<testing::ShmIndex> idx;
  {
    auto c = testing::client(p, 1000);
    idx = testing::ShmIndex::create(c, ro);
  }
  harness::StressOptions o;
  o.threads = 2;
  o.fibers = 4;
  o.keys = 64;
  o.ops_per_worker = 1000;
  auto out = harness::run_stress(
      p,
      [&](testing::ShmClient& c) {
        return LongKeyHandle<testing::ShmIndex::Handle>(idx->handle(c), 256);
      },
      o);
  EXPECT_EQ(out.result.verdict, Verdict::kViolation) << out.result.explain();
}
#endif

INSTANTIATE_TEST_SUITE_P(KeyBytes, RaceBytesLinearizable, ::testing::Values(32u, 256u));

}  // namespace
}  // namespace dmrt::race
