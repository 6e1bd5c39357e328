// `rolex`: ROLEX learned index (FAST'23) on disaggregated memory, with its memory-node retraining
// service.
#pragma once

#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

#include "bench/index_rolex_flags.h"
#include "indexes/rolex/index.h"
#include "indexes/rolex/services.h"
#include "policies/shm/service.h"
#include "runtime/client.h"
#include "runtime/kv.h"
#include "runtime/service.h"
#include "runtime/services_word.h"
#if DMRT_TRANSPORT_SIM
#include "policies/sim/service.h"
#endif

namespace dmrt::bench {

template <Transport T>
struct RolexAdapter {
  static constexpr std::string_view kName = "rolex";
  static constexpr std::string_view kSummary =
      "ROLEX (FAST'23): learned models cached on compute nodes, one-sided leaves, retraining on "
      "the memory node";
  static constexpr bool kLocal = false;

  // The index plus the retraining service it needs, homed on the memory node: on shm a thread,
  // on sim a service fiber in virtual time whose work is charged as the memory node's CPU (so
  // retraining is off the compute clients' path, as in the paper). Other transports (no
  // ServiceHost here yet): the compute client that meets a full synonym table retrains the group
  // itself (Options::compute_retrain_fallback; its verbs are then counted on that client).
  struct Index {
    std::shared_ptr<rolex::Index<T>> index;
    std::unique_ptr<shm::ServiceHost> service;
#if DMRT_TRANSPORT_SIM
    std::unique_ptr<sim::ServiceHost> sim_service;
#endif
    ~Index() {
      try {
        if (service) service->stop();
#if DMRT_TRANSPORT_SIM
        if (sim_service) sim_service->stop();
#endif
      } catch (...) {
      }
    }
  };
  using Handle = typename rolex::Index<T>::Handle;
  using Flags = RolexFlags;  // --rolex-* (bench/index_rolex_flags.h)
  // Transports with a retraining ServiceHost above; the others retrain on the compute side.
#if DMRT_TRANSPORT_SIM
  static constexpr bool kHasService =
      std::is_same_v<T, ShmTransport> || std::is_same_v<T, SimTransport>;
#else
  static constexpr bool kHasService = std::is_same_v<T, ShmTransport>;
#endif

  // The options the index runs with: sizing from the bench, then the --rolex-* flags. Used by
  // create() and by describe() (the "index_options" of every result).
  static rolex::Options options(const IndexOptions& o, const Flags& f) {
    rolex::Options ro;
    ro.value_size = static_cast<uint32_t>(o.value_size);
    ro.expected_keys = o.expected_keys;
    ro.key_space = o.key_space ? o.key_space + 1 : 0;
    // Loads arrive as inserts: pre-cut the key space into groups of ~1000 expected keys each,
    // so retraining a group stays as cheap as the paper's ~1,465 keys per model.
    ro.initial_groups = static_cast<uint32_t>(
        std::max<uint64_t>(1, std::min<uint64_t>(o.expected_keys / 1000, 1u << 20)));
    if constexpr (!kHasService) {
      ro.compute_retrain_fallback = true;
      ro.full_slt_wait_ns = 0;
    }
    f.apply(ro);
    return ro;
  }
  static nlohmann::json describe(const IndexOptions& o, const Flags& f) {
    nlohmann::json j = RolexFlags::describe(options(o, f));
    // "auto": create() reads the memory node's services word (dmrt-node --service rolex).
    if constexpr (!kHasService) j["compute_retrain_fallback"] = "auto";
    return j;
  }

  static std::shared_ptr<Index> create(Client<T>& setup, const IndexOptions& o, const Flags& f) {
    const rolex::Options ro = options(o, f);
    auto out = std::make_shared<Index>();
    if constexpr (std::is_same_v<T, ShmTransport>) {
      // Non-owning: the bench's environment owns the pool and outlives the index.
      std::shared_ptr<shm::Pool> pool(std::shared_ptr<void>{}, &setup.endpoint().pool());
      NodeId node = setup.memory_nodes().front();
      out->index = rolex::Index<T>::create(setup, ro);
      rolex::ServiceOptions so;
      so.root_slot = ro.root_slot;
      out->service = std::make_unique<shm::ServiceHost>(
          pool, node, 1,
          [so](ServiceContext<ShmTransport>& ctx) { rolex::retrain_service(ctx, so); });
#if DMRT_TRANSPORT_SIM
    } else if constexpr (std::is_same_v<T, SimTransport>) {
      NodeId node = setup.memory_nodes().front();
      out->index = rolex::Index<T>::create(setup, ro);
      rolex::ServiceOptions so;
      so.root_slot = ro.root_slot;
      so.idle_sleep_us = 0;  // a wall-clock sleep would only slow the simulation down
      // Frozen between the bench's phases, stopped (in virtual time) when the index goes away.
      out->sim_service = std::make_unique<sim::ServiceHost>(
          setup.endpoint().core_ptr(), node, 1,
          [so](ServiceContext<SimTransport>& ctx) { rolex::retrain_service(ctx, so); });
#endif
    } else {
      // The memory node is another process (verbs: dmrt-node). It retrains if it advertises the
      // service (dmrt-node --service rolex); otherwise the compute clients retrain.
      rolex::Options here = ro;
      NodeId node = setup.memory_nodes().front();
      if (await_services(setup, node) & service_bit(rolex::RetrainService::kInfo)) {
        here.compute_retrain_fallback = false;
        here.full_slt_wait_ns = rolex::Options{}.full_slt_wait_ns;
      }
      out->index = rolex::Index<T>::create(setup, here);
    }
    return out;
  }
  static Handle handle(Index& idx, Client<T>& c) {
    return idx.index->handle(c);
  }
  static IndexStats stats(Index& idx, Client<T>& c) {
    return idx.index->stats(c);
  }
  static uint64_t cache_bytes(Index&, Handle& h) {
    return h.cache_bytes();
  }
};

}  // namespace dmrt::bench
