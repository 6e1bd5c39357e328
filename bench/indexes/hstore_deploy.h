// How dmrt-bench runs HStore: its servers deployed as memory-node services on each transport
// (the run spec of DmAdapter; bench/indexes/hstore.cpp and
// tests/hstore/hstore_bench_adapter_test.cpp).
#pragma once

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/indexes/adapter.h"
#include "bench/indexes/dm_adapter.h"
#include "indexes/hstore/deploy.h"
#include "indexes/hstore/prebuilt.h"
#include "indexes/hstore/services.h"
#include "policies/shm/service.h"
#include "runtime/client.h"
#include "runtime/error.h"
#include "runtime/scheduler.h"
#include "runtime/service.h"
#include "runtime/services_word.h"
#if DMRT_TRANSPORT_SIM
#include "policies/sim/service.h"
#endif
#if DMRT_TRANSPORT_VERBS
#include "policies/verbs/service.h"
#endif

namespace dmrt::bench {

// Both HStore servers on one OS thread of this process, each fiber homed on its server's node
// (shm::ServiceHost runs one thread per server). On shm every core is shared with the clients:
// with a thread per server a write waits for the HTS thread, then the SLS thread, then the HTS
// thread again to be scheduled, and each idle server thread spins away a core's share; on one
// thread the HTS -> SLS -> HTS part of the trip is a fiber switch.
class ShmJointServiceHost : public ServiceThread {
 public:
  using Part = hstore::Deployment<ShmTransport>::HostPart;
  ShmJointServiceHost(std::shared_ptr<shm::Pool> pool, std::vector<Part> parts)
      : pool_(std::move(pool)) {
    unsigned total = 0;
    for (const Part& p : parts) total += p.fibers;
    start([this, total, parts = std::move(parts)](const std::atomic<bool>& stop) {
      Scheduler sched({1, total});
      sched.run([&](const WorkerId& w) {
        // Fibers [0, parts[0].fibers) run the first part, the next ones the second, ...; each
        // part sees its own fiber numbers from 0. Client ids stay distinct per node.
        size_t i = 0;
        unsigned f = w.fiber;
        while (f >= parts[i].fibers) f -= parts[i++].fibers;
        Client<ShmTransport> c(shm::Endpoint(pool_, parts[i].node, kServiceClientIdBase + w.fiber));
        const shm::Region& r = pool_->region(parts[i].node);
        ServiceContext<ShmTransport> ctx(c, r.base, r.bytes, f, stop);
        run_fiber([&] { parts[i].body(ctx); });
      });
    });
  }
  ~ShmJointServiceHost() {
    try {
      stop();  // before pool_ goes: the fibers use it
    } catch (...) {
      // A destructor cannot report; call stop() to see the failure.
    }
  }

 private:
  std::shared_ptr<shm::Pool> pool_;
};

// How dmrt-bench runs HStore (DmAdapter's run spec, bench/indexes/dm_adapter.h).
struct HStoreRun {
  using Options = hstore::Options;
  template <Transport T>
  using Index = hstore::Index<T>;
  static constexpr bool kPerComputeNode = false;
  static constexpr uint64_t kVerbsGraceNs = 1'000'000'000;

  template <Transport T>
  static Options options(Options o, const IndexOptions& io) {
    o.expected_keys = std::max<uint64_t>(io.expected_keys, 1024);
    if (io.value_size > hstore::Record::kMaxValue)
      throw ConfigError("hstore: --value-size " + std::to_string(io.value_size) +
                        " exceeds the record limit of " +
                        std::to_string(hstore::Record::kMaxValue) + " bytes");
    return o;
  }

  // The index plus its two servers, homed on memory nodes: on shm both on one thread of this
  // process (ShmJointServiceHost), on sim fibers in virtual time whose work is charged as the
  // memory node's CPU, on verbs a thread on the memory node's own Cluster in the one-process
  // mode, or, with --cluster/--nodes, the dmrt-node serving that memory node (--service
  // hstore-hts / hstore-sls; nothing to stop here then). HStore cannot run without them (writes
  // and scans are requests to the servers), so a setup without them is refused.
  template <Transport T>
  static Deployed<Index<T>> deploy(Client<T>& setup, const Options& o) {
    Options ho = o;
    Deployed<Index<T>> out;
    hstore::ServerOptions so;
    // How the servers' fibers are hosted on this transport.
    typename hstore::Deployment<T>::HostFactory host;
    if constexpr (std::is_same_v<T, ShmTransport>) {
      // Non-owning: the bench's environment owns the pool and outlives the index.
      std::shared_ptr<shm::Pool> pool(std::shared_ptr<void>{}, &setup.endpoint().pool());
      if (!pool->owner()) {
        // A pool another process made (dmrt-bench --attach): the servers are its dmrt-node's
        // (--service hstore-hts / hstore-sls), which outlive this process.
        out.index = Index<T>::create(setup, ho);
        require_remote_servers(setup, out.index->meta());
        return out;
      }
      out.index = Index<T>::create(setup, ho);
      say_one_node(out.index->meta());
      // The transport sleeps a thread whose fibers all wait and wakes it when a message is sent
      // (policies/shm/idle.h): the servers' own sleep after 500 us idle would only add latency.
      so.idle_sleep_us = 0;
      // Both servers on one thread (ShmJointServiceHost); the bench never fails one alone.
      auto joint = [pool](std::vector<ShmJointServiceHost::Part> parts) ->
          typename hstore::Deployment<T>::Stop {
            auto h = std::make_shared<ShmJointServiceHost>(pool, std::move(parts));
            return [h] { h->stop(); };
          };
      auto servers = std::make_shared<hstore::Deployment<T>>(
          out.index, typename hstore::Deployment<T>::JointHostFactory(joint), so);
      servers->start();
      out.stop = [servers] { servers->stop(); };
      return out;
#if DMRT_TRANSPORT_SIM
    } else if constexpr (std::is_same_v<T, SimTransport>) {
      so.idle_sleep_us = 0;  // a wall-clock sleep would only slow the simulation down
      auto core = setup.endpoint().core_ptr();
      // Frozen between the bench's phases, stopped (in virtual time) when the index goes away.
      host = [core](NodeId node, unsigned fibers, ServiceBody<T> body) ->
          typename hstore::Deployment<T>::Stop {
            auto h = std::make_shared<sim::ServiceHost>(core, node, fibers, std::move(body));
            return [h] { h->stop(); };
          };
#endif
#if DMRT_TRANSPORT_VERBS
    } else if constexpr (std::is_same_v<T, VerbsTransport>) {
      verbs::Cluster& self = setup.endpoint().cluster();
      // A reader slower than grace/2 redoes its read, and the HTS redoes its key check without
      // bound: under Soft-RoCE on an emulated CPU a loopback READ takes tens of ms, so the HTS
      // never got past its first key check with the default 50 ms. A longer grace only keeps
      // replaced records allocated longer.
      ho.grace_ns = std::max<uint64_t>(ho.grace_ns, kVerbsGraceNs);
      bool all_here = true;
      for (NodeId m : setup.memory_nodes()) all_here = all_here && self.colocated(m);
      if (!all_here) {
        // --cluster/--nodes: the memory nodes are other processes, whose dmrt-node hosts the
        // servers (--service hstore-hts / hstore-sls); they pick the index up from its meta.
        out.index = Index<T>::create(setup, ho);
        require_remote_servers(setup, out.index->meta());
        return out;
      }
      // One-process mode: the servers run on the memory nodes' own Clusters in this process.
      host = [&self](NodeId node, unsigned fibers, ServiceBody<T> body) ->
          typename hstore::Deployment<T>::Stop {
            auto h = std::make_shared<verbs::ReservedServiceHost>(*self.colocated(node), fibers,
                                                                  std::move(body));
            return [h] { h->stop(); };
          };
#endif
    } else {
      throw ConfigError(std::string("hstore needs memory-node services, and transport ") +
                        std::string(T::kName) + " has no ServiceHost in dmrt-bench");
    }
    out.index = Index<T>::create(setup, ho);
    say_one_node(out.index->meta());
    auto servers = std::make_shared<hstore::Deployment<T>>(out.index, std::move(host), so);
    servers->start();
    out.stop = [servers] { servers->stop(); };
    return out;
  }

  static void say_one_node(const hstore::Meta& m) {
    if (m.hts_node == m.sls_node)
      std::fprintf(stderr,
                   "hstore: one memory node: its hash-table and skiplist servers share node %u "
                   "(the paper places them on two: --memory-nodes 2)\n",
                   static_cast<unsigned>(m.hts_node));
  }

  // The servers of an index whose memory nodes are other processes: each must advertise its
  // service on the node the index places it on.
  template <Transport T>
  static void require_remote_servers(Client<T>& setup, const hstore::Meta& m) {
    for (auto [node, info] : {std::pair{m.hts_node, hstore::HtsService::kInfo},
                              std::pair{m.sls_node, hstore::SlsService::kInfo}}) {
      if (!(await_services(setup, node) & service_bit(info)))
        throw ConfigError("hstore: memory node " + std::to_string(node) +
                          " does not run the service " + std::string(info.name) +
                          " (start its dmrt-node with --service " + std::string(info.name) +
                          "; with one memory node give both --service hstore-hts and "
                          "--service hstore-sls)");
    }
  }
};

}  // namespace dmrt::bench
