// HStore on the sim transport: both servers as sim::ServiceHost fibers in virtual time; round trips
// per GET/SCAN, virtual latencies, a failure and rebuild of each server inside a run, determinism.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "indexes/hstore/deploy.h"
#include "indexes/hstore/prebuilt.h"
#include "policies/sim/cluster.h"
#include "policies/sim/service.h"

namespace dmrt::sim {
namespace {

using HIndex = hstore::Index<SimTransport>;
using HDeployment = hstore::Deployment<SimTransport>;

HDeployment::HostFactory sim_hosts(const Cluster& cluster) {
  auto core = cluster.core();
  return [core](NodeId node, unsigned fibers, ServiceBody<SimTransport> body) -> HDeployment::Stop {
    auto h = std::make_shared<ServiceHost>(core, node, fibers, std::move(body));
    return [h] { h->stop(); };
  };
}

struct Outcome {
  uint64_t end_ns = 0, gets = 0, get_rtts = 0, get_ns = 0, put_ns = 0, puts = 0, scan_ns = 0,
           scans = 0;
  uint64_t scan_rtts = 0, scan_msgs = 0;
  double sls_rebuild_ms = 0, hts_rebuild_ms = 0;
  bool operator==(const Outcome&) const = default;
};

std::string val(Key k, unsigned v) {
  return "value-" + std::to_string(k) + "-" + std::to_string(v);
}

// 2 memory nodes (HTS on one, SLS on the other), 8 clients. Run 1: load and read; run 2: the SLS
// is killed and rebuilt by client 0 while the others keep reading; run 3: the same for the HTS.
Outcome scenario() {
  Options o = Options::preset("rdma-cx6");
  o.compute_nodes = 1;
  o.clients_per_node = 8;
  o.memory_nodes = 2;
  o.memory_bytes = uint64_t{256} << 20;
  Cluster cluster(o);
  const NodeId cn = cluster.compute_nodes()[0];
  SimClient setup(cluster.endpoint(cn, 300));
  hstore::Options ho;
  ho.expected_keys = 8192;
  auto idx = HIndex::create(setup, ho);  // untimed, before any run
  hstore::ServerOptions so;
  so.idle_sleep_us = 0;
  HDeployment servers(idx, sim_hosts(cluster), so);
  servers.start();
  constexpr Key kKeys = 4000;
  Outcome r;
  cluster.run([&](SimClient& c, const WorkerInfo& w) {
    auto h = idx->handle(c);
    for (Key k = w.index; k < kKeys; k += w.total) {
      uint64_t t0 = c.now_ns();
      ASSERT_TRUE(h.insert(k * 3 + 1, val(k, 0)));
      r.put_ns += c.now_ns() - t0;
      ++r.puts;
    }
  });
  cluster.run([&](SimClient& c, const WorkerInfo& w) {
    auto h = idx->handle(c);
    std::string out;
    for (Key k = w.index; k < kKeys; k += w.total) {
      uint64_t t0 = c.now_ns(), rt = c.counters().total.round_trips;
      ASSERT_TRUE(h.search(k * 3 + 1, out));
      ASSERT_EQ(out, val(k, 0));
      r.get_rtts += c.counters().total.round_trips - rt;
      r.get_ns += c.now_ns() - t0;
      ++r.gets;
    }
    std::vector<std::pair<Key, std::string>> rows;
    for (unsigned i = 0; i < 10; ++i) {
      VerbCounters before = c.counters().total;
      uint64_t t0 = c.now_ns();
      h.scan(1 + 3 * (w.index * 100 + i), 100, rows);
      r.scan_ns += c.now_ns() - t0;
      VerbCounters d = c.counters().total - before;
      r.scan_rtts += d.round_trips;
      r.scan_msgs += d.messages;
      ++r.scans;
      EXPECT_EQ(rows.size(), 100u);
    }
  });
  // Failures inside a run: client 0 is the manager; the others read and write their own keys.
  for (bool sls : {true, false}) {
    std::vector<std::map<Key, std::string>> model(8);
    cluster.run([&](SimClient& c, const WorkerInfo& w) {
      auto h = idx->handle(c);
      std::string out;
      if (w.index == 0) {
        SimClient mc(cluster.endpoint(cn, 301));
        c.endpoint().charge_cpu(200'000);
        if (sls)
          servers.fail_sls(mc);
        else
          servers.fail_hts(mc);
        c.endpoint().charge_cpu(500'000);
        if (sls)
          servers.rebuild_sls();
        else
          servers.rebuild_hts();
        ASSERT_TRUE(servers.wait_serving(mc, 10'000'000'000ull));
        return;
      }
      for (unsigned i = 0; i < 200; ++i) {
        Key k = 100'000 + w.index * 1000 + i % 50;
        std::string v = val(k, i + 1);
        if (i % 3 == 0) {
          ASSERT_TRUE(h.search(i * 3 + 1, out));  // a loaded key, also during the outage
        } else if (h.update(k, v) || h.insert(k, v)) {
          model[w.index][k] = v;
        }
      }
    });
    auto h = idx->handle(setup);
    std::string out;
    for (auto& m : model)
      for (auto& [k, v] : m) {
        EXPECT_TRUE(h.search(k, out)) << k;
        EXPECT_EQ(out, v);
      }
  }
  r.end_ns = cluster.now_ns();
  auto s = idx->stats(setup);
  r.sls_rebuild_ms = s["sls_rebuild_ms"];
  r.hts_rebuild_ms = s["hts_rebuild_ms"];
  EXPECT_EQ(s["sls_rebuilds"], 2);
  EXPECT_EQ(s["hts_rebuilds"], 1);
  servers.stop();
  return r;
}

TEST(HStoreSim, RoundTripsLatenciesFailuresAndDeterminism) {
  Outcome a = scenario();
  // 2 per GET; a key in an overflow bucket (or a false signature match) costs one more.
  EXPECT_GE(a.get_rtts, 2 * a.gets);
  EXPECT_LE(a.get_rtts, 2 * a.gets + a.gets / 100);
  EXPECT_EQ(a.scan_msgs, a.scans);
  EXPECT_EQ(a.scan_rtts, 100 * a.scans);
  std::printf(
      "sim rdma-cx6: PUT %.2f us, GET %.2f us (%.2f RTT), SCAN(100) %.2f us (1 request + %.1f "
      "RTT); "
      "rebuilds (virtual, 4000+ keys): SLS %.3f ms, HTS %.3f ms; end %.3f ms\n",
      a.put_ns / 1e3 / a.puts, a.get_ns / 1e3 / a.gets, double(a.get_rtts) / a.gets,
      a.scan_ns / 1e3 / a.scans, double(a.scan_rtts) / a.scans, a.sls_rebuild_ms, a.hts_rebuild_ms,
      a.end_ns / 1e6);
  Outcome b = scenario();
  EXPECT_EQ(a, b) << "virtual time differs between identical runs";
}

}  // namespace
}  // namespace dmrt::sim
