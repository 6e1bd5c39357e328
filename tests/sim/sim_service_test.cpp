// Memory-node services on sim: service fibers in virtual time, local accesses charged as the node's
// CPU (not its NIC), idle services that sleep instead of spinning, freezing between runs, stop().
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dmrt/policies/sim/cluster.h"
#include "dmrt/policies/sim/report_json.h"
#include "dmrt/policies/sim/service.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt::sim {
namespace {

// The small model of sim_test.cpp: 20 ns per verb, 0.08 ns per byte, 1 us one way, 100 ns CPU.
Options service_model(unsigned compute, unsigned per_node) {
  Options o;
  o.compute_nodes = compute;
  o.clients_per_node = per_node;
  o.memory_bytes = uint64_t{64} << 20;
  o.compute_bytes = uint64_t{8} << 20;
  o.nic_mops = 50;
  o.nic_gbps = 100;
  o.header_bytes = 64;
  o.latency_ns = 1000;
  o.cpu_ns = 100;
  o.poll_ns = 100;
  o.service_access_ns = 100;  // + 8 B at 80 Gb/s = 100.8 ns per local atomic or 8 B read
  o.service_gbps = 80;
  o.service_msg_ns = 200;
  o.service_idle_ns = 1'000'000;  // an idle service wakes only when its memory changes
  return o;
}

GlobalAddress word(NodeId n, uint64_t i) {
  return GlobalAddress(n, (uint64_t{16} << 20) + 8 * i);
}

std::span<const std::byte> as_bytes(const uint64_t& v) {
  return {reinterpret_cast<const std::byte*>(&v), 8};
}
uint64_t value_of(const Message& m) {
  uint64_t v = 0;
  std::memcpy(&v, m.payload.data(), 8);
  return v;
}

// The service: per request, one local FAA on a counter word of its node, reply with the old value.
ServiceBody<SimTransport> counter_service() {
  return [](ServiceContext<SimTransport>& ctx) {
    Message req;
    while (ctx.next_message(req)) {
      uint64_t old = ctx.client().faa(word(ctx.node(), 0), 1);
      ctx.client().reply(req, req.tag + 1, as_bytes(old));
    }
  };
}

struct CallRun {
  std::vector<uint64_t> call_ns;  // per call, client 0
  Report report;
  uint64_t end_ns = 0;
  uint64_t served = 0;
  std::string json;
};

CallRun calls(Options o, unsigned clients, unsigned per_client) {
  o.compute_nodes = 1;
  o.clients_per_node = clients;
  Cluster c(o);
  ServiceHost host(c, 0, 1, counter_service());
  CallRun out;
  out.call_ns.resize(per_client);
  c.run([&](SimClient& cl, const WorkerInfo& w) {
    for (unsigned i = 0; i < per_client; ++i) {
      uint64_t t0 = cl.now_ns();
      Message m = cl.call(0, 0, 10, {});
      EXPECT_EQ(m.tag, 11u);
      if (w.index == 0) out.call_ns[i] = cl.now_ns() - t0;
    }
  });
  out.report = c.report();
  out.end_ns = c.now_ns();
  host.stop();
  SimClient reader(c.endpoint(c.compute_nodes()[0], 0));
  out.served = reader.read_value<uint64_t>(word(0, 0));
  out.json = nlohmann::json(out.report).dump();
  return out;
}

TEST(SimService, AnswersMessagesWithItsCpuChargedInVirtualTime) {
  Options o = service_model(1, 1);
  CallRun one = calls(o, 1, 1);
  // Request: posted at 0, through the compute NIC (20 ns), 1000 ns on the wire, pushed into the
  // inbox at 1020. The blocked service wakes at 1020, takes it (200 ns), FAAs its counter
  // locally (100.8 ns) and replies at 1320.8: 20 ns at its NIC + 1000 ns, in the reply box at
  // 2340.8. The client finished its send at 2145.12 (ack back at 2045.12 + 100 ns CPU) and polls
  // every 100 ns: it sees the reply at 2345.12.
  EXPECT_EQ(one.call_ns[0], 2345u);
  ASSERT_EQ(one.report.services.size(), 1u);
  const ServiceReport& s = one.report.services[0];
  EXPECT_EQ(s.node, 0);
  EXPECT_EQ(s.local_verbs, 1u);
  EXPECT_EQ(s.local_bytes, 8u);
  EXPECT_EQ(s.messages, 1u);
  EXPECT_EQ(s.wakeups, 1u);  // the request's arrival, not a poll
  // 200 (message) + 100.8 (local FAA) + 100 (posting the reply) ns.
  EXPECT_EQ(s.cpu_ns, 400u);
  // The memory node's NIC served the request and posted the reply: the FAA never touched it.
  EXPECT_EQ(one.report.nics[0].ops, 2u);

  // Many clients: every call counted once, each costs the service exactly 400.8 ns of CPU and two
  // NIC operations, and the figures are deterministic.
  CallRun a = calls(o, 8, 25), b = calls(o, 8, 25);
  EXPECT_EQ(a.served, 200u);
  ASSERT_EQ(a.report.services.size(), 1u);
  EXPECT_EQ(a.report.services[0].messages, 200u);
  EXPECT_EQ(a.report.services[0].local_verbs, 200u);
  EXPECT_EQ(a.report.services[0].cpu_ns, 200u * 4008u / 10u);
  EXPECT_EQ(a.report.nics[0].ops, 400u);
  EXPECT_EQ(a.json, b.json);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.call_ns, b.call_ns);

  // A dearer message costs every call that much more service time (here, unloaded).
  Options dear = o;
  dear.service_msg_ns = 1200;
  CallRun slow = calls(dear, 1, 1);
  EXPECT_EQ(slow.call_ns[0], one.call_ns[0] + 1000);
}

TEST(SimService, AnIdleServiceSleepsInsteadOfPolling) {
  Options o = service_model(1, 1);
  o.service_idle_ns = 1000;  // wake at least every microsecond anyway
  Cluster c(o);
  ServiceHost host(c, 0, 1, counter_service());
  c.run([&](SimClient& cl, const WorkerInfo&) {
    cl.endpoint().charge_cpu(1'000'000);  // 1 ms with nothing to serve
    cl.call(0, 0, 1, {});
  });
  Report r = c.report();
  // Spinning at poll_ns would take 10,000 polls in 1 ms; the service woke about once per
  // service_idle_ns instead (one timeout event each), plus the few events of the call.
  EXPECT_GE(r.events, 1000u);
  EXPECT_LE(r.events, 1020u);
  host.stop();
}

TEST(SimService, LocalWritesWakeTheNodesOtherServiceFibers) {
  Options o = service_model(1, 1);
  Cluster c(o);
  uint64_t seen_at = 0;
  ServiceHost host(c, 0, 2, [&](ServiceContext<SimTransport>& ctx) {
    if (ctx.fiber() == 0) {
      ctx.client().endpoint().charge_cpu(5000);
      ctx.client().faa(word(0, 1), 1);  // local: 100.8 ns
      return;
    }
    while (!ctx.stop_requested() && ctx.client().read_value<uint64_t>(word(0, 1)) == 0)
      ctx.client().pause();
    seen_at = ctx.client().now_ns();
  });
  c.run([&](SimClient& cl, const WorkerInfo&) { cl.endpoint().charge_cpu(20'000); });
  host.stop();
  // The FAA took effect at 5000 and woke fiber 1 then; its re-read cost 100.8 ns.
  EXPECT_EQ(seen_at, 5100u);
}

TEST(SimService, FrozenBetweenRunsResumesWithItsStateAndStopsCleanly) {
  Options o = service_model(1, 1);
  Cluster c(o);
  bool returned = false;
  int starts = 0;
  ServiceHost host(c, 0, 1, [&](ServiceContext<SimTransport>& ctx) {
    ++starts;
    uint64_t served = 0;  // state on the fiber's stack: it must survive between runs
    Message req;
    while (ctx.next_message(req)) ctx.client().reply(req, 1, as_bytes(++served));
    returned = true;
  });
  EXPECT_FALSE(host.running());  // starts with the first run
  std::vector<uint64_t> answers;
  uint64_t client_end = 0;
  for (int run = 0; run < 2; ++run) {
    c.run([&](SimClient& cl, const WorkerInfo&) {
      for (int i = 0; i < 3; ++i) answers.push_back(value_of(cl.call(0, 0, 1, {})));
      client_end = cl.now_ns();
    });
    // The run ended with its client: the service (still running, frozen) did not extend it.
    EXPECT_EQ(c.now_ns(), client_end);
    EXPECT_TRUE(host.running());
    EXPECT_FALSE(returned);
  }
  EXPECT_EQ(answers, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));  // the same body throughout
  host.stop();  // outside a run: runs the simulation until the service returns
  EXPECT_TRUE(returned);
  EXPECT_EQ(starts, 1);
  EXPECT_FALSE(host.running());
  EXPECT_EQ(host.counters().total.messages, 6u);
  host.stop();  // idempotent
}

TEST(SimService, StartedAndStoppedInsideARun) {
  Cluster c(service_model(1, 1));
  uint64_t got = 0;
  c.run([&](SimClient& cl, const WorkerInfo&) {
    ServiceHost host(cl.endpoint().core_ptr(), 0, 1, counter_service());
    EXPECT_TRUE(host.running());
    got = value_of(cl.call(0, 0, 1, {})) + value_of(cl.call(0, 0, 1, {}));
    host.stop();
    EXPECT_FALSE(host.running());
  });
  EXPECT_EQ(got, 1u);  // 0 + 1
}

TEST(SimService, FailureInAServiceFiberIsReportedByStop) {
  Cluster c(service_model(1, 1));
  ServiceHost host(
      c, 0, 1, [](ServiceContext<SimTransport>&) { throw std::runtime_error("service broke"); });
  c.run([](SimClient& cl, const WorkerInfo&) { cl.endpoint().charge_cpu(100); });
  try {
    host.stop();
    FAIL() << "no failure reported";
  } catch (const WorkerFailure& e) {
    EXPECT_NE(std::string(e.what()).find("service broke"), std::string::npos) << e.what();
  }
}

TEST(SimService, RunsOnlyOnTheThreadItsFibersLiveOn) {
  Cluster c(service_model(1, 1));
  ServiceHost host(c, 0, 1, counter_service());
  c.run([](SimClient& cl, const WorkerInfo&) { cl.call(0, 0, 1, {}); });
  std::thread other(
      [&] { EXPECT_THROW(c.run([](SimClient&, const WorkerInfo&) {}), WorkerFailure); });
  other.join();
  c.run([](SimClient& cl, const WorkerInfo&) { cl.call(0, 0, 1, {}); });  // still fine here
  host.stop();
}

TEST(SimService, WorksUnderASchedulerWithTheClusterHooks) {
  Cluster c(service_model(1, 4));
  ServiceHost host(c, 0, 2, counter_service());
  Scheduler s({1, 4});
  for (int phase = 0; phase < 2; ++phase)
    s.run(
        [&](const WorkerId& id) {
          SimClient cl(c.endpoint(c.compute_nodes()[0], id.index));
          for (int i = 0; i < 10; ++i) cl.call(0, 0, 1, {});
        },
        c.hooks());
  host.stop();
  SimClient reader(c.endpoint(c.compute_nodes()[0], 0));
  EXPECT_EQ(reader.read_value<uint64_t>(word(0, 0)), 80u);
}

}  // namespace
}  // namespace dmrt::sim
