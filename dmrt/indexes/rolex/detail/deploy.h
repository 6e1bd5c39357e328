// ROLEX deployment: the index and its retraining service (§3.4, on the memory node), where a
// ServiceHosting puts it (dmrt/runtime/service_hosting.h), or the memory node's own process runs
// it.
#pragma once

#include <span>
#include <string>
#include <utility>

#include "dmrt/indexes/rolex/detail/prebuilt.h"
#include "dmrt/indexes/rolex/detail/services.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/service_hosting.h"
#include "dmrt/runtime/services_word.h"

namespace dmrt::rolex {

// The index, created with `keys` bulk loaded (none: empty), and its retrainer:
//  * o.retrain_on_compute: no service, compute clients retrain;
//  * hosted here: one retraining fiber on the first memory node;
//  * else the memory node's process should run it (dmrt-node --service rolex). When it does,
//    compute clients never retrain; when it does not, they do if o.compute_retrain_fallback
//    allows, and otherwise the deployment is refused.
template <Transport T>
Deployed<Index<T>> deploy(Client<T>& setup, Options o, std::span<const Key> keys,
                          typename Index<T>::ValueFn value_of, const ServiceHosting<T>& hosting) {
  Deployed<Index<T>> out;
  const NodeId node = setup.memory_nodes().front();
  if (o.retrain_on_compute) {
    out.index = Index<T>::create(setup, o, keys, value_of);
    return out;
  }
  if (hosting.hosted_here()) {
    ServiceOptions so;
    so.root_slot = o.root_slot;
    if (hosting.virtual_time) so.idle_sleep_us = 0;  // it polls the queue in memory
    out.index = Index<T>::create(setup, o, keys, value_of);
    out.stop = hosting.start(node, 1, [so](ServiceContext<T>& ctx) { retrain_service(ctx, so); });
    return out;
  }
  if (await_services(setup, node) & service_bit(RetrainService::kInfo)) {
    if (o.compute_retrain_fallback) {  // the service will serve: compute clients wait for it
      o.compute_retrain_fallback = false;
      o.full_slt_wait_ns = Options{}.full_slt_wait_ns;
    }
  } else if (!o.compute_retrain_fallback) {
    throw ConfigError("rolex: memory node " + std::to_string(node) +
                      " does not run the service rolex (start its dmrt-node with --service "
                      "rolex)");
  }
  out.index = Index<T>::create(setup, o, keys, value_of);
  return out;
}

}  // namespace dmrt::rolex
