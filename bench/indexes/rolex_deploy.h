// How dmrt-bench runs ROLEX: its retraining service on the memory node and the bulk load of the
// load phase (the run spec of DmAdapter; bench/indexes/rolex.cpp and
// tests/rolex/rolex_bench_adapter_test.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

#include "bench/indexes/adapter.h"
#include "bench/indexes/dm_adapter.h"
#include "indexes/rolex/prebuilt.h"
#include "indexes/rolex/services.h"
#include "policies/shm/service.h"
#include "runtime/client.h"
#include "runtime/error.h"
#include "runtime/service.h"
#include "runtime/services_word.h"
#if DMRT_TRANSPORT_SIM
#include "policies/sim/service.h"
#endif

namespace dmrt::bench {

struct RolexRun {
  using Options = rolex::Options;
  template <Transport T>
  using Index = rolex::Index<T>;
  static constexpr bool kPerComputeNode = false;  // its model cache is per handle

  // Transports on which the bench hosts the retraining service itself: on shm a thread, on sim a
  // service fiber in virtual time whose work is charged as the memory node's CPU (so retraining
  // is off the compute clients' path, as in the paper). On the others the memory node is another
  // process: it retrains if its dmrt-node runs `--service rolex`, else the compute client that
  // meets a full synonym table retrains the group itself (Options::compute_retrain_fallback).
  template <Transport T>
  static constexpr bool kHostsService = std::is_same_v<T, ShmTransport>
#if DMRT_TRANSPORT_SIM
                                        || std::is_same_v<T, SimTransport>
#endif
      ;

  template <Transport T>
  static Options options(Options o, const IndexOptions& io) {
    o.value_size = static_cast<uint32_t>(io.value_size);
    o.expected_keys = io.expected_keys;
    o.key_space = io.key_space ? io.key_space + 1 : 0;
    // A load by inserts (bulk_load off) starts from empty groups: pre-cut the key space into
    // groups of ~1000 expected keys each, so retraining a group stays as cheap as the paper's
    // ~1,465 keys per model. A bulk load cuts its groups from the keys instead.
    o.initial_groups = static_cast<uint32_t>(
        std::max<uint64_t>(1, std::min<uint64_t>(io.expected_keys / 1000, 1u << 20)));
    if (!kHostsService<T> || o.retrain_on_compute) {
      o.compute_retrain_fallback = true;
      o.full_slt_wait_ns = 0;
    }
    return o;
  }
  // "auto": deploy() reads the memory node's services word (dmrt-node --service rolex).
  template <Transport T>
  static void describe(nlohmann::json& j, const Options&) {
    if constexpr (!kHostsService<T>) j["compute_retrain_fallback"] = "auto";
  }

  static bool bulk_loads(const Options& o) {
    return o.bulk_load;
  }

  template <Transport T>
  static Deployed<Index<T>> deploy(Client<T>& setup, const Options& ro, const IndexOptions& io) {
    Deployed<Index<T>> out;
    std::span<const Key> keys;
    typename Index<T>::ValueFn value_of;
    if (io.bulk_load) {
      keys = io.bulk_load->keys;
      value_of = io.bulk_load->value_of;
    }
    const NodeId node = setup.memory_nodes().front();
    rolex::ServiceOptions so;
    so.root_slot = ro.root_slot;
    if (ro.retrain_on_compute) {  // no memory-node service: compute clients retrain
      out.index = Index<T>::create(setup, ro, keys, value_of);
      return out;
    }
    if constexpr (std::is_same_v<T, ShmTransport>) {
      // Non-owning: the bench's environment owns the pool and outlives the index.
      std::shared_ptr<shm::Pool> pool(std::shared_ptr<void>{}, &setup.endpoint().pool());
      if (!pool->owner()) {
        // A pool another process made (dmrt-bench --attach): retraining is its dmrt-node's
        // (--service rolex), which outlives this process.
        if (!(await_services(setup, node) & service_bit(rolex::RetrainService::kInfo)))
          throw ConfigError("rolex on an attached pool: memory node " + std::to_string(node) +
                            " does not run the service rolex (start its dmrt-node with "
                            "--service rolex)");
        out.index = Index<T>::create(setup, ro, keys, value_of);
        return out;
      }
      out.index = Index<T>::create(setup, ro, keys, value_of);
      auto host = std::make_shared<shm::ServiceHost>(
          pool, node, 1,
          [so](ServiceContext<ShmTransport>& ctx) { rolex::retrain_service(ctx, so); });
      out.stop = [host] { host->stop(); };
#if DMRT_TRANSPORT_SIM
    } else if constexpr (std::is_same_v<T, SimTransport>) {
      out.index = Index<T>::create(setup, ro, keys, value_of);
      so.idle_sleep_us = 0;  // a wall-clock sleep would only slow the simulation down
      // Frozen between the bench's phases, stopped (in virtual time) when the index goes away.
      auto host = std::make_shared<sim::ServiceHost>(
          setup.endpoint().core_ptr(), node, 1,
          [so](ServiceContext<SimTransport>& ctx) { rolex::retrain_service(ctx, so); });
      out.stop = [host] { host->stop(); };
#endif
    } else {
      Options here = ro;
      if (await_services(setup, node) & service_bit(rolex::RetrainService::kInfo)) {
        here.compute_retrain_fallback = false;
        here.full_slt_wait_ns = Options{}.full_slt_wait_ns;
      }
      out.index = Index<T>::create(setup, here, keys, value_of);
    }
    return out;
  }
};

}  // namespace dmrt::bench
