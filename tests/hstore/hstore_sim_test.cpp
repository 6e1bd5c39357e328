// HStore on the sim transport: both servers as sim::ServiceHost fibers in virtual time; round trips
// per GET/SCAN, virtual latencies, a failure and rebuild of each server inside a run, determinism.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "dmrt/check/history.h"
#include "dmrt/check/linearizability.h"
#include "dmrt/indexes/hstore/detail/deploy.h"
#include "dmrt/indexes/hstore/hstore.h"
#include "dmrt/policies/sim/cluster.h"
#include "dmrt/policies/sim/service.h"
#include "dmrt/runtime/key_bytes.h"

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

// rdma-cx6, one compute node of `clients` clients and two memory nodes of `memory_bytes` each
// (the HTS on one, the SLS on the other).
Options one_compute_two_memory(unsigned clients, uint64_t memory_bytes) {
  Options o = Options::preset("rdma-cx6");
  o.compute_nodes = 1;
  o.clients_per_node = clients;
  o.memory_nodes = 2;
  o.memory_bytes = memory_bytes;
  return o;
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
  const Options o = one_compute_two_memory(8, uint64_t{256} << 20);
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

// Costs per operation with byte keys (README "Long keys"), one client, 2 memory nodes, 8-byte
// values, keys of exactly key_size bytes ("user" + zero-padded number; key_size 8: the integer
// keys' 8 bytes). Per operation: round trips, one-sided bytes read / written, and the request's
// message bytes (the client's side). Deterministic: the figures are asserted.
struct KeyCosts {
  double rt = 0, rd = 0, wr = 0, msg = 0, msg_bytes = 0;
  bool operator==(const KeyCosts&) const = default;
};
struct KeyCostRun {
  KeyCosts get, insert, update, remove, scan10;
  bool operator==(const KeyCostRun&) const = default;
};

std::string sized_key(uint32_t key_size, uint64_t i) {
  if (key_size == 8) return key_bytes(i);
  std::string n = std::to_string(i);
  return "user" + std::string(key_size - 4 - n.size(), '0') + n;
}

KeyCostRun key_costs(uint32_t key_size) {
  const Options o = one_compute_two_memory(1, uint64_t{256} << 20);
  Cluster cluster(o);
  SimClient setup(cluster.endpoint(cluster.compute_nodes()[0], 300));
  hstore::Options ho;
  ho.key_size = key_size;
  ho.expected_keys = 8192;
  auto idx = HIndex::create(setup, ho);
  hstore::ServerOptions so;
  so.idle_sleep_us = 0;
  HDeployment servers(idx, sim_hosts(cluster), so);
  servers.start();
  constexpr uint64_t kN = 2000, kM = 200;
  KeyCostRun r;
  auto add = [](KeyCosts& k, const VerbCounters& d, double n) {
    k.rt += d.round_trips / n;
    k.rd += d.bytes_read / n;
    k.wr += d.bytes_written / n;
    k.msg += d.messages / n;
    k.msg_bytes += d.message_bytes / n;
  };
  cluster.run([&](SimClient& c, const WorkerInfo&) {
    auto h = idx->handle(c);
    std::string out;
    VerbCounters before = c.counters().total;
    for (uint64_t i = 0; i < kN; ++i)
      ASSERT_TRUE(h.insert(KeyView(sized_key(key_size, i)), "12345678"));
    add(r.insert, c.counters().total - before, kN);
    before = c.counters().total;
    for (uint64_t i = 0; i < kN; ++i) {
      ASSERT_TRUE(h.search(KeyView(sized_key(key_size, i)), out));
      ASSERT_EQ(out, "12345678");
    }
    add(r.get, c.counters().total - before, kN);
    std::vector<std::pair<std::string, std::string>> rows;
    before = c.counters().total;
    for (uint64_t i = 0; i < kM; ++i) {
      h.scan(KeyView(sized_key(key_size, i * 7)), 10, rows);
      ASSERT_EQ(rows.size(), 10u);
      for (size_t j = 1; j < rows.size(); ++j) ASSERT_LT(rows[j - 1].first, rows[j].first);
    }
    add(r.scan10, c.counters().total - before, kM);
    before = c.counters().total;
    for (uint64_t i = 0; i < kM; ++i)
      ASSERT_TRUE(h.update(KeyView(sized_key(key_size, i)), "87654321"));
    add(r.update, c.counters().total - before, kM);
    before = c.counters().total;
    for (uint64_t i = 0; i < kM; ++i) ASSERT_TRUE(h.remove(KeyView(sized_key(key_size, i))));
    add(r.remove, c.counters().total - before, kM);
  });
  servers.stop();
  return r;
}

TEST(HStoreSim, CostsPerOperationWithByteKeys) {
  for (uint32_t ks : {8u, 32u, 256u}) {
    KeyCostRun a = key_costs(ks);
    auto line = [&](const char* op, const KeyCosts& k) {
      std::printf("key %3u B %-7s RT %.4f  read %.2f B  written %.2f B  requests %.2f (%.2f B)\n",
                  ks, op, k.rt, k.rd, k.wr, k.msg, k.msg_bytes);
    };
    line("get", a.get);
    line("insert", a.insert);
    line("update", a.update);
    line("delete", a.remove);
    line("scan10", a.scan10);
    // A record: 16-byte header, the key (integer keys: in the header), the 8-byte value.
    const double rec = ks == 8 ? 24 : 16 + ks + 8;
    // A request carries 4 words, then the key's bytes (integer keys: in a word); a SCAN 2 words.
    const double key_msg = ks == 8 ? 0 : ks;
    // GET: bucket + status word (one trip), then the record; these keys never share a bucket
    // chain hop, and a false signature match (another key's record read) is rare.
    EXPECT_EQ(a.get.rt, 2.0);
    EXPECT_GE(a.get.rd, 64 + 8 + rec);
    EXPECT_LE(a.get.rd, 64 + 8 + rec * 1.01);
    EXPECT_EQ(a.get.msg, 0.0);
    // Writes: the record WRITE (and the allocator's chunk claim, one per MiB), one request.
    for (const KeyCosts* k : {&a.insert, &a.update}) {
      EXPECT_GE(k->rt, 1.0);
      EXPECT_LE(k->rt, 1.001);
      EXPECT_GE(k->wr, rec);
      EXPECT_LE(k->wr, rec + 0.01);  // the chunk claim's 8 bytes, once in 2000 inserts
      EXPECT_EQ(k->msg, 1.0);
      EXPECT_EQ(k->msg_bytes, 32 + key_msg);
    }
    EXPECT_EQ(a.remove.rt, 0.0);
    EXPECT_EQ(a.remove.msg_bytes, 32 + key_msg);
    // SCAN(10): one request, then one record READ per row (scan_reads_per_trip = 1).
    EXPECT_EQ(a.scan10.rt, 10.0);
    EXPECT_EQ(a.scan10.rd, 10 * rec);
    EXPECT_EQ(a.scan10.msg, 1.0);
    EXPECT_EQ(a.scan10.msg_bytes, 16 + key_msg);
    EXPECT_EQ(a, key_costs(ks)) << "costs differ between identical runs";
  }
}

// Scans slower than grace/2 (here: a 40 us grace against scans of 50-100 one-record trips of
// ~3 us) are re-read against the table (Handle::reread_linked) rather than redone: the old rule
// redid every such scan, and no long one ever completed (as on Soft-RoCE under an emulated CPU).
// Writers replace hot records meanwhile, and the replaced ones are freed 40 us later: the
// history, scans included, must check, and every scan must have completed.
TEST(HStoreSim, SlowScansAreReReadAgainstTheTable) {
  const Options o = one_compute_two_memory(8, uint64_t{128} << 20);
  Cluster cluster(o);
  SimClient setup(cluster.endpoint(cluster.compute_nodes()[0], 300));
  hstore::Options ho;
  ho.expected_keys = 2048;
  ho.grace_ns = 40'000;
  auto idx = HIndex::create(setup, ho);
  hstore::ServerOptions so;
  so.idle_sleep_us = 0;
  HDeployment servers(idx, sim_hosts(cluster), so);
  servers.start();
  constexpr Key kKeys = 600;
  std::vector<HistoryRecorder> rec(o.clients_per_node);
  cluster.run([&](SimClient& c, const WorkerInfo& w) {
    auto h = idx->handle(c);
    for (Key k = w.index; k < kKeys; k += w.total) {
      const uint64_t t0 = c.now_ns();
      const bool ok = h.insert(k, val(k, 0));
      rec[w.index].insert(k, val(k, 0), ok, t0, c.now_ns());
      ASSERT_TRUE(ok);
    }
  });
  size_t scans = 0;
  cluster.run([&](SimClient& c, const WorkerInfo& w) {
    auto h = idx->handle(c);
    std::mt19937_64 rng(w.index + 1);
    std::vector<std::pair<Key, std::string>> rows;
    std::string out;
    for (unsigned i = 0; i < 60; ++i) {
      const uint64_t t0 = c.now_ns();
      if (w.index % 2 == 0) {  // scanners
        const Key from = rng() % kKeys;
        const size_t count = 50 + rng() % 51;
        h.scan(from, count, rows);
        rec[w.index].scan(from, count, rows, t0, c.now_ns());
        ASSERT_EQ(rows.size(), std::min<size_t>(count, kKeys - from));
        ++scans;
      } else if (i % 4 == 0) {
        const Key k = rng() % kKeys;
        const bool ok = h.search(k, out);
        rec[w.index].search(k, ok, out, t0, c.now_ns());
      } else {  // writers: replaced records go to limbo, freed a grace later
        const Key k = rng() % kKeys;
        const std::string v = val(k, w.index * 1000 + i + 1);
        const bool ok = h.update(k, v);
        rec[w.index].update(k, v, ok, t0, c.now_ns());
      }
    }
  });
  History hist;
  for (auto& r : rec) hist.append(std::move(r));
  const CheckResult res = check_history(hist);
  EXPECT_TRUE(res.linearizable) << res.details;
  EXPECT_EQ(res.scans_checked, scans);
  auto s = idx->stats(setup);
  std::printf("scans %zu, re-read against the table %.0f, redone %.0f, records freed %.0f\n", scans,
              s["scan_reanchors"], s["scan_retries"], s["records_freed"]);
  EXPECT_GT(s["scan_reanchors"], 0);
  EXPECT_GT(s["records_freed"], 0);
  servers.stop();
}

}  // namespace
}  // namespace dmrt::sim
