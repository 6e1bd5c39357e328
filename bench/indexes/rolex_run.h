// How dmrt-bench runs ROLEX: its retraining service on the memory node and the bulk load of the
// load phase (the run spec of DmAdapter; bench/indexes/rolex.cpp and
// tests/rolex/rolex_bench_adapter_test.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "bench/indexes/adapter.h"
#include "bench/indexes/dm_adapter.h"
#include "dmrt/indexes/rolex/detail/deploy.h"
#include "dmrt/policies/hosting.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/transport.h"

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
  static constexpr bool kHostsService = hosts_services<T>;

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

  static bool bulk_loads(const Options& o) { return o.bulk_load; }

  template <Transport T>
  static Deployed<Index<T>> deploy(Client<T>& setup, const Options& ro, const IndexOptions& io) {
    std::span<const Key> keys;
    typename Index<T>::ValueFn value_of;
    if (io.bulk_load) {
      keys = io.bulk_load->keys;
      value_of = io.bulk_load->value_of;
    }
    ServiceHosting<T> hosting;  // none: the memory node's process retrains, or compute clients
    if constexpr (kHostsService<T>) hosting = service_hosting(setup);
    return rolex::deploy(setup, ro, keys, value_of, hosting);
  }
};

}  // namespace dmrt::bench
