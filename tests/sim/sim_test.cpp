// The sim transport: its queueing model against closed-form figures, determinism, verb ordering in
// virtual time, messaging, presets and flags. Every assertion is on virtual time, never wall time.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <boost/fiber/operations.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dmrt/policies/sim/cli.h"
#include "dmrt/policies/sim/cluster.h"
#include "dmrt/policies/sim/report_json.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt::sim {
namespace {

// A small, explicit model so that the expected figures are easy to derive by hand.
Options model(unsigned compute, unsigned per_node, unsigned memory = 1) {
  Options o;
  o.compute_nodes = compute;
  o.clients_per_node = per_node;
  o.memory_nodes = memory;
  o.memory_bytes = uint64_t{64} << 20;
  o.compute_bytes = uint64_t{8} << 20;
  o.nic_mops = 50;   // 20 ns per verb
  o.nic_gbps = 100;  // 0.08 ns per byte
  o.header_bytes = 64;
  o.latency_ns = 1000;
  o.cpu_ns = 100;
  o.poll_ns = 100;
  return o;
}

// A global address on memory node `n` well past the allocator's bump word and the mailboxes.
GlobalAddress data(const Cluster&, NodeId n, uint64_t offset) {
  return GlobalAddress(n, (uint64_t{16} << 20) + offset);
}

struct Throughput {
  double ops_per_s;
  double avg_latency_ns;
  Report report;
};

// Every client READs `size` bytes in a loop until the virtual deadline.
Throughput read_loop(const Options& o, uint32_t size, uint64_t duration_ns) {
  Cluster c(o);
  std::vector<uint64_t> ops(o.clients()), lat(o.clients());
  c.run(
      [&](SimClient& cl, const WorkerInfo& w) {
        std::vector<std::byte> buf(size);
        GlobalAddress a = data(c, 0, (uint64_t{w.index} * size) % (uint64_t{32} << 20));
        while (!w.expired()) {
          uint64_t t0 = cl.now_ns();
          cl.read(a, buf.data(), size);
          lat[w.index] += cl.now_ns() - t0;
          ++ops[w.index];
        }
      },
      RunOptions{duration_ns, {}, 0});
  uint64_t total = 0, total_lat = 0;
  for (unsigned i = 0; i < o.clients(); ++i) total += ops[i], total_lat += lat[i];
  Report r = c.report();
  return {total / (r.elapsed_ns * 1e-9), double(total_lat) / total, r};
}

double bandwidth_bound(const Options& o, uint32_t size) {
  return o.nic_gbps * 1e9 / 8 / (size + o.header_bytes);
}

TEST(SimModel, SmallReadsSaturateTheMessageRate) {
  Options o = model(4, 64);
  const uint32_t size = 64;
  double expect = std::min(o.nic_mops * 1e6, bandwidth_bound(o, size));
  ASSERT_EQ(expect, 50e6);  // IOPS bound: 128 B of response take 10.24 ns < 20 ns per op
  Throughput t = read_loop(o, size, 1'000'000);
  EXPECT_NEAR(t.ops_per_s / expect, 1.0, 0.05) << t.report.describe();
  EXPECT_EQ(t.report.bottleneck, "node 0 (memory) NIC message rate") << t.report.describe();
  EXPECT_TRUE(t.report.saturated);
  EXPECT_GT(t.report.nics[0].iops_util, 0.95);
  EXPECT_LT(t.report.nics[1].iops_util, 0.5);  // each compute NIC carries a quarter
  // 64 clients' first posts queue at their compute NIC too, but that NIC is not saturated.
  EXPECT_EQ(t.report.saturated_first, "node 0 (memory) NIC message rate") << t.report.describe();
  EXPECT_EQ(t.report.nics[1].saturated, "") << t.report.describe();
}

TEST(SimModel, LargeReadsSaturateTheBandwidth) {
  Options o = model(4, 64);
  const uint32_t size = 8192;
  double expect = std::min(o.nic_mops * 1e6, bandwidth_bound(o, size));
  ASSERT_LT(expect, 2e6);  // bandwidth bound: 12.5 GB/s / 8256 B
  Throughput t = read_loop(o, size, 2'000'000);
  EXPECT_NEAR(t.ops_per_s / expect, 1.0, 0.05) << t.report.describe();
  EXPECT_EQ(t.report.bottleneck, "node 0 (memory) NIC tx bandwidth") << t.report.describe();
  EXPECT_GT(t.report.nics[0].tx_util, 0.95);
  EXPECT_LT(t.report.nics[0].iops_util, 0.1);
}

// A pool behind a switch (cxl-pool): each host's link is the limit, not the pool's, so four
// compute nodes reach four times one link.
TEST(SimModel, AFasterMemoryNodeLinkMovesTheBottleneckToTheHosts) {
  Options o = model(4, 64);
  o.memory_nic_gbps = 4.5 * o.nic_gbps;
  const uint32_t size = 8192;
  double per_host = bandwidth_bound(o, size);
  Throughput t = read_loop(o, size, 2'000'000);
  EXPECT_NEAR(t.ops_per_s / (4 * per_host), 1.0, 0.05) << t.report.describe();
  EXPECT_EQ(t.report.bottleneck.find("(memory)"), std::string::npos) << t.report.describe();
  EXPECT_GT(t.report.nics[1].rx_util, 0.95);
  EXPECT_LT(t.report.nics[0].tx_util, 0.95);
}

TEST(SimModel, UnsaturatedThroughputFollowsLittlesLaw) {
  Options o = model(1, 4);
  Throughput t = read_loop(o, 64, 1'000'000);
  // Unloaded latency: post (20 ns op) + 1000 + serve (20 ns op) + 1000 + response rx
  // (128 B = 10.24 ns) + cpu 100 = 2150.24 ns.
  EXPECT_NEAR(t.avg_latency_ns / 2150.24, 1.0, 0.05);
  EXPECT_NEAR(t.ops_per_s / (4 / (t.avg_latency_ns * 1e-9)), 1.0, 0.05);
  EXPECT_FALSE(t.report.saturated) << t.report.describe();
}

TEST(SimModel, ThroughputGrowsWithClientsUntilTheNicSaturates) {
  double prev = 0;
  for (unsigned per_node : {1u, 4u, 16u, 64u}) {
    Throughput t = read_loop(model(4, per_node), 64, 300'000);
    EXPECT_GT(t.ops_per_s, prev);
    EXPECT_LE(t.ops_per_s, 50e6 * 1.01);
    prev = t.ops_per_s;
  }
}

// A mixed workload with per-client seeded choices: everything it produces must repeat exactly.
struct Outcome {
  std::string report;
  std::vector<uint64_t> finish_ns;
  uint64_t checksum = 0;
  uint64_t verbs = 0, round_trips = 0;
  bool operator==(const Outcome&) const = default;
};

Outcome mixed_run() {
  Options o = model(3, 16, 2);
  Cluster c(o);
  Outcome out;
  out.finish_ns.resize(o.clients());
  c.run([&](SimClient& cl, const WorkerInfo& w) {
    std::mt19937_64 rng(1000 + w.index);
    std::vector<std::byte> buf(512);
    for (int i = 0; i < 300; ++i) {
      NodeId n = static_cast<NodeId>(rng() % 2);
      GlobalAddress a = data(c, n, (rng() % 4096) * 8);
      switch (rng() % 5) {
        case 0:
          cl.read(a, buf.data(), 8 + rng() % 500);
          break;
        case 1:
          cl.write(a, buf.data(), 8 + rng() % 100);
          break;
        case 2:
          cl.cas(a, rng() % 4, rng());
          break;
        case 3:
          cl.faa(data(c, n, 0), 1);
          break;
        default: {
          Batch b[2];
          b[0].read(a, buf.data(), 64).faa(data(c, n, 8), 1);
          b[1].read(data(c, 1 - n, 64), buf.data() + 64, 64);
          cl.run(std::span<Batch>(b, 2));
        }
      }
      if (rng() % 7 == 0) cl.endpoint().charge_cpu(rng() % 300);
    }
    out.finish_ns[w.index] = cl.now_ns();
  });
  out.report = c.report().describe();
  for (NodeId n : {0, 1}) {
    std::vector<uint64_t> words(4096);
    std::memcpy(words.data(), c.core()->translate(data(c, n, 0), 4096 * 8), 4096 * 8);
    for (uint64_t w : words) out.checksum = out.checksum * 1099511628211ull + w;
  }
  out.verbs = c.last_counters().total.total_verbs();
  out.round_trips = c.last_counters().total.round_trips;
  return out;
}

TEST(SimDeterminism, SameParametersGiveIdenticalResults) {
  Outcome a = mixed_run();
  Outcome b = mixed_run();
  EXPECT_EQ(a.report, b.report);
  EXPECT_EQ(a.finish_ns, b.finish_ns);
  EXPECT_EQ(a.checksum, b.checksum);
  EXPECT_EQ(a.verbs, b.verbs);
  EXPECT_EQ(a, b);
  EXPECT_GE(a.verbs, 48u * 300u);
}

TEST(SimOrdering, CasRacesGiveExactCounts) {
  Options o = model(4, 16);
  auto race = [&] {
    Cluster c(o);
    GlobalAddress word = data(c, 0, 0);
    std::vector<uint64_t> failures(o.clients());
    c.run([&](SimClient& cl, const WorkerInfo& w) {
      for (int i = 0; i < 50; ++i) {
        uint64_t v = cl.read_value<uint64_t>(word);
        for (;;) {
          uint64_t old = cl.cas(word, v, v + 1);
          if (old == v) break;
          ++failures[w.index];
          v = old;
        }
        cl.faa(data(c, 0, 8), 1);
      }
    });
    uint64_t v = 0, f = 0;
    std::memcpy(&v, c.core()->translate(word, 8), 8);
    EXPECT_EQ(v, 64u * 50u);
    std::memcpy(&f, c.core()->translate(data(c, 0, 8), 8), 8);
    EXPECT_EQ(f, 64u * 50u);
    uint64_t total = 0;
    for (uint64_t x : failures) total += x;
    EXPECT_GT(total, 0u);  // the clients really raced
    return std::make_pair(total, c.now_ns());
  };
  EXPECT_EQ(race(), race());
}

TEST(SimOrdering, LaterVerbsOfABatchSeeEarlierOnes) {
  Cluster c(model(1, 1));
  c.run([&](SimClient& cl, const WorkerInfo&) {
    uint64_t one = 1, seen = 0, old1 = 0, old2 = 0, after = 0;
    Batch b;
    b.write(data(c, 0, 0), &one, 8).read(data(c, 0, 0), &seen, 8);
    b.faa(data(c, 0, 0), 5, &old1).cas(data(c, 0, 0), 6, 9, &old2).read(data(c, 0, 0), &after, 8);
    uint64_t t0 = cl.now_ns();
    cl.run(b);
    EXPECT_EQ(seen, 1u);
    EXPECT_EQ(old1, 1u);
    EXPECT_EQ(old2, 6u);
    EXPECT_EQ(after, 9u);
    // Five pipelined verbs cost one round trip plus four extra post slots (20 ns each).
    EXPECT_LT(cl.now_ns() - t0, 2150 + 4 * 20 + 30);
  });
}

TEST(SimOrdering, BatchesToTwoNodesCostOneRoundTrip) {
  Cluster c(model(1, 1, 2));
  c.run([&](SimClient& cl, const WorkerInfo&) {
    uint64_t x = 0, y = 0;
    uint64_t t0 = cl.now_ns();
    cl.read(data(c, 0, 0), &x, 8);
    uint64_t one = cl.now_ns() - t0;
    Batch b[2];
    b[0].read(data(c, 0, 0), &x, 8);
    b[1].read(data(c, 1, 0), &y, 8);
    t0 = cl.now_ns();
    cl.run(std::span<Batch>(b, 2));
    uint64_t two = cl.now_ns() - t0;
    EXPECT_NEAR(one, 2150, 10);
    EXPECT_LE(two, one + 25);  // only the second post slot at the sending NIC
    EXPECT_EQ(cl.counters().total.round_trips, 2u);
  });
}

TEST(SimOrdering, VerbsTakeEffectWhenTheyReachTheTarget) {
  // Two clients on different compute nodes. The writer posts at t = 100 ns; its WRITE reaches
  // memory at ~1120 ns and completes at ~2250 ns. A READ arriving before 1120 sees the old
  // value; one issued later but arriving between 1120 and 2250 already sees the new one.
  for (uint64_t reader_start : {0ull, 200ull}) {
    Cluster c(model(2, 1));
    uint64_t seen = 0, seen_at = 0;
    c.run([&](SimClient& cl, const WorkerInfo& w) {
      if (w.index == 0) {
        cl.endpoint().charge_cpu(100);
        uint64_t v = 42;
        cl.write(data(c, 0, 0), &v, 8);
      } else {
        if (reader_start) cl.endpoint().charge_cpu(reader_start);
        seen = cl.read_value<uint64_t>(data(c, 0, 0));
        seen_at = cl.now_ns();
      }
    });
    EXPECT_EQ(seen, reader_start == 0 ? 0u : 42u) << "reader at " << reader_start;
    EXPECT_LT(seen_at, 2500u);
  }
}

// One verb of `kind` by one client to host memory or to device memory (dmrt/runtime/address.h): its
// virtual latency, the client's counters and the memory node's NIC figures.
struct OneVerb {
  uint64_t ns = 0;
  VerbCounters counted;
  uint64_t nic_ops = 0, nic_tx = 0, nic_rx = 0;
};
OneVerb one_verb(const Options& o, VerbKind kind, bool device) {
  Cluster c(o);
  OneVerb out;
  c.run([&](SimClient& cl, const WorkerInfo&) {
    // Both allocate, so that both start their verb at the same virtual time.
    GlobalAddress dm = cl.alloc_device_memory(0, 64);
    GlobalAddress a = device ? dm : data(c, 0, 0);
    uint64_t v = 5, t0 = cl.now_ns();
    switch (kind) {
      case VerbKind::kCas:
        EXPECT_EQ(cl.cas(a, 0, 9), 0u);
        break;
      case VerbKind::kFaa:
        EXPECT_EQ(cl.faa(a, 9), 0u);
        break;
      case VerbKind::kRead:
        cl.read(a, &v, 8);
        EXPECT_EQ(v, 0u);
        break;
      default:
        cl.write(a, &v, 8);
    }
    out.ns = cl.now_ns() - t0;
    if (kind != VerbKind::kRead) {
      EXPECT_EQ(cl.read_value<uint64_t>(a), kind == VerbKind::kWrite ? 5u : 9u);
    }
  });
  out.counted = c.last_counters().total;
  const Report r = c.report();  // not a reference into the temporary: nics dies with it
  const NicReport& m = r.nics[0];
  out.nic_ops = m.ops;
  out.nic_tx = m.tx_bytes;
  out.nic_rx = m.rx_bytes;
  return out;
}

TEST(SimDeviceMemory, ReadsAndAtomicsSkipThePcieRoundTripWithTheSameVerbsAndBytes) {
  Options o = model(1, 1);
  o.pcie_rtt_ns = 300;
  for (VerbKind k : {VerbKind::kCas, VerbKind::kFaa, VerbKind::kRead, VerbKind::kWrite}) {
    OneVerb host = one_verb(o, k, false), dm = one_verb(o, k, true);
    // Unloaded: post 20 + 1000 + serve 20 + 1000 + response rx + cpu 100, minus the PCIe round
    // trip for a READ or an atomic on device memory; a WRITE is posted to memory either way.
    EXPECT_GT(host.ns, 2140u) << verb_name(k);
    EXPECT_EQ(host.ns - dm.ns, k == VerbKind::kWrite ? 0u : 300u) << verb_name(k);
    // The same verbs, bytes and round trips, at the client and on the memory node's NIC.
    EXPECT_EQ(dm.counted.round_trips, host.counted.round_trips) << verb_name(k);
    EXPECT_EQ(dm.counted.verbs, host.counted.verbs) << verb_name(k);
    EXPECT_EQ(dm.counted.bytes_read, host.counted.bytes_read) << verb_name(k);
    EXPECT_EQ(dm.counted.bytes_written, host.counted.bytes_written) << verb_name(k);
    EXPECT_EQ(dm.counted.local_accesses, 0u);
    EXPECT_EQ(dm.nic_ops, host.nic_ops) << verb_name(k);
    EXPECT_EQ(dm.nic_tx, host.nic_tx) << verb_name(k);
    EXPECT_EQ(dm.nic_rx, host.nic_rx) << verb_name(k);
  }
  // Without a PCIe saving (the cxl preset's 0) device memory costs what host memory does.
  o.pcie_rtt_ns = 0;
  EXPECT_EQ(one_verb(o, VerbKind::kCas, true).ns, one_verb(o, VerbKind::kCas, false).ns);
  // A saving larger than the latency it is part of counts as the whole latency.
  o.pcie_rtt_ns = 5000;
  EXPECT_EQ(one_verb(o, VerbKind::kCas, false).ns - one_verb(o, VerbKind::kCas, true).ns, 1000u);
}

TEST(SimDeviceMemory, WithSerializedAtomicsOneHostWordWaitsForEachPcieRoundTrip) {
  // Two clients on two compute nodes CAS the same word at the same moment. With
  // serialize_atomics, on host memory the second waits for the first's PCIe read-modify-write
  // (400 ns); on device memory, or without serialize_atomics, neither waits. Both take effect in
  // arrival order: exactly one CAS wins every time.
  for (bool serialize : {true, false}) {
    for (bool device : {false, true}) {
      Options o = model(2, 1);
      o.serialize_atomics = serialize;
      Cluster c(o);
      uint64_t ns[2] = {0, 0}, won = 0;
      c.run([&](SimClient& cl, const WorkerInfo& w) {
        GlobalAddress a = device ? GlobalAddress::device(0, 0) : data(c, 0, 0);
        uint64_t t0 = cl.now_ns();
        if (cl.cas(a, 0, w.index + 1) == 0) ++won;
        ns[w.index] = cl.now_ns() - t0;
      });
      EXPECT_EQ(won, 1u);
      const uint64_t slow = std::max(ns[0], ns[1]), fast = std::min(ns[0], ns[1]);
      if (serialize && !device)
        EXPECT_GE(slow - fast, 400u);
      else
        EXPECT_LT(slow - fast, 50u) << "only the NIC's message rate separates them";
    }
  }
}

TEST(SimDeviceMemory, ContendedLockHandsOverSoonerInDeviceMemory) {
  // Eight clients on two compute nodes take and release one lock word (CAS, then WRITE 0) for
  // 200 us of virtual time: with the word in device memory each CAS answers 400 ns sooner, so
  // the lock is held for less time and changes hands more often. Deterministic counts.
  auto acquisitions = [](bool device) {
    Options o = model(2, 4);
    o.serialize_atomics = true;
    Cluster c(o);
    GlobalAddress lock;
    uint64_t taken = 0;
    c.run(
        [&](SimClient& cl, const WorkerInfo& w) {
          if (w.index == 0) lock = device ? cl.alloc_device_memory(0, 64) : data(c, 0, 0);
          while (!lock) cl.pause();
          while (!w.expired()) {
            if (cl.cas(lock, 0, w.index + 1) != 0) continue;
            ++taken;
            uint64_t zero = 0;
            cl.write(lock, &zero, 8);
          }
        },
        RunOptions{200'000, {}, 0});
    return taken;
  };
  uint64_t host = acquisitions(false), dm = acquisitions(true);
  EXPECT_GT(host, 0u);
  EXPECT_GT(dm, host + host / 10) << "host " << host << ", device memory " << dm;
  EXPECT_EQ(dm, acquisitions(true));  // deterministic
}

std::span<const std::byte> bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
std::string text(const Message& m) {
  return {reinterpret_cast<const char*>(m.payload.data()), m.payload.size()};
}

TEST(SimMessaging, RequestResponseCostsVirtualTime) {
  Options o = model(2, 4);
  Cluster c(o);
  const unsigned clients = o.clients();
  const int calls = 20;
  std::vector<uint64_t> call_ns(clients);
  // Worker `clients` is the memory-node service; the others call it.
  c.run_fibers(clients + 1, [&](const WorkerInfo& w) {
    if (w.index == clients) {
      SimClient server(c.endpoint(0, 5000));
      for (unsigned i = 0; i < clients * calls; ++i) {
        Message req = server.receive(0);
        server.reply(req, req.tag + 1, bytes("echo:" + text(req)));
      }
      return;
    }
    SimClient cl(c.endpoint(w.home, w.client_id));
    for (int i = 0; i < calls; ++i) {
      std::string body = "ping " + std::to_string(w.index) + "/" + std::to_string(i);
      uint64_t t0 = cl.now_ns();
      Message resp = cl.call(0, 0, 7, bytes(body));
      call_ns[w.index] += cl.now_ns() - t0;
      EXPECT_EQ(resp.tag, 8u);
      EXPECT_EQ(text(resp), "echo:" + body);
      EXPECT_EQ(resp.from_node, 0);
    }
    EXPECT_EQ(cl.counters().total.messages, unsigned(calls));
  });
  for (unsigned i = 0; i < clients; ++i) {
    // A call is at least a request delivery (one traversal) plus a reply delivery.
    EXPECT_GE(call_ns[i] / calls, 2 * (2 * o.latency_ns)) << i;
    EXPECT_LT(call_ns[i] / calls, 100'000u) << i;
  }
  EXPECT_EQ(c.report().messages, 2u * clients * calls);
}

TEST(SimRuntime, PauseAdvancesVirtualTimeSoSpinnersDoNotLivelock) {
  Cluster c(model(1, 2));
  uint64_t waited = 0;
  c.run([&](SimClient& cl, const WorkerInfo& w) {
    GlobalAddress flag = data(c, 0, 0);
    if (w.index == 0) {
      cl.endpoint().charge_cpu(50'000);
      cl.faa(flag, 1);
    } else {
      uint64_t t0 = cl.now_ns();
      while (cl.read_value<uint64_t>(flag) == 0) cl.pause();
      waited = cl.now_ns() - t0;
    }
  });
  EXPECT_GT(waited, 50'000u);
  EXPECT_LT(waited, 60'000u);
}

TEST(SimRuntime, UntimedOutsideARunAndSchedulerHooksInside) {
  Cluster c(model(1, 4));
  // Outside a run: applied inline, no virtual time passes (loading data before a measurement).
  SimClient loader(c.endpoint(c.compute_nodes()[0], 0));
  loader.faa(data(c, 0, 0), 10);
  EXPECT_EQ(loader.read_value<uint64_t>(data(c, 0, 0)), 10u);
  EXPECT_EQ(c.now_ns(), 0u);
  // dmrt::Scheduler on one thread with the cluster's hooks runs in virtual time.
  Scheduler s({1, 4});
  std::vector<uint64_t> end(4);
  s.run(
      [&](const WorkerId& id) {
        SimClient cl(c.endpoint(c.compute_nodes()[0], id.index));
        for (int i = 0; i < 10; ++i) cl.faa(data(c, 0, 0), 1);
        end[id.index] = cl.now_ns();
      },
      c.hooks());
  EXPECT_EQ(loader.read_value<uint64_t>(data(c, 0, 0)), 50u);
  for (uint64_t e : end) {
    EXPECT_GT(e, 10 * 2000u);
    EXPECT_LT(e, 10 * 2400u);
  }
  EXPECT_EQ(c.report().verbs, 40u);
  // Two schedulers in a row on the same thread, and round_robin restored in between.
  s.run([&](const WorkerId&) { boost::this_fiber::yield(); });
}

TEST(SimRuntime, WorkerExceptionsAreReported) {
  Cluster c(model(1, 2));
  EXPECT_THROW(c.run([&](SimClient& cl, const WorkerInfo& w) {
    if (w.index == 1) cl.read_value<uint64_t>(GlobalAddress(0, uint64_t{1} << 40));
  }),
               WorkerFailure);
}

TEST(SimOptions, PresetsAndFlags) {
  EXPECT_THROW(Options::preset("infiniband-9000"), ConfigError);
  Options cx6 = Options::preset("rdma-cx6");
  EXPECT_EQ(cx6.nic_gbps, 100);
  Options cxl = Options::preset("cxl");
  EXPECT_FALSE(cxl.native_masked_cas);
  EXPECT_LT(cxl.latency_ns, cx6.latency_ns);
  Options pool = Options::preset("cxl-pool");
  EXPECT_EQ(pool.nic_gbps, 80);          // 10 GB/s per host (Duhu)
  EXPECT_EQ(pool.memory_nic_gbps, 320);  // four hosts at once
  EXPECT_EQ(2 * pool.latency_ns + pool.cpu_ns, 700u);
  EXPECT_EQ(Options::preset_names(), (std::vector<std::string>{"rdma-cx6", "cxl", "cxl-pool"}));
  cx6.apply_preset("cxl-pool");
  cx6.apply_preset("cxl");  // a preset that leaves the memory link alone resets it
  EXPECT_EQ(cx6.memory_nic_gbps, 0);

  Options o;
  CLI::App app;
  add_cli_flags(app, o);
  std::vector<std::string> args = {"--nic-mops",         "42", "--compute-nodes", "10",
                                   "--clients-per-node", "32", "--preset",        "cxl",
                                   "--memory-nodes",     "2"};
  std::vector<const char*> argv = {"prog"};
  for (auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(o.preset_name, "cxl");
  EXPECT_EQ(o.nic_mops, 42);  // explicit flag wins over the preset given after it
  EXPECT_EQ(o.nic_gbps, cxl.nic_gbps);
  EXPECT_EQ(o.compute_nodes, 10u);
  EXPECT_EQ(o.clients_per_node, 32u);
  EXPECT_EQ(o.memory_nodes, 2u);

  Options bad;
  CLI::App app2;
  add_cli_flags(app2, bad);
  const char* argv2[] = {"prog", "--preset", "nope"};
  EXPECT_THROW(app2.parse(3, argv2), CLI::ValidationError);

  nlohmann::json j = o;
  EXPECT_EQ(j["preset"], "cxl");
}

TEST(SimOptions, ReportSerialises) {
  Options o = model(2, 8);
  Throughput t = read_loop(o, 256, 100'000);
  nlohmann::json j = t.report;
  EXPECT_EQ(j["nics"].size(), 3u);
  EXPECT_EQ(j["nics"][0]["role"], "memory");
  EXPECT_GT(j["verbs"].get<uint64_t>(), 0u);
}

}  // namespace
}  // namespace dmrt::sim
