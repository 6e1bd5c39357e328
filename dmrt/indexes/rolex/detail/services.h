// ROLEX's memory-node services, as registered with a node program
// (dmrt/runtime/service_registry.h): the retraining service (§3.5), `--service rolex`.
#pragma once

#include <string>

#include "dmrt/indexes/rolex/detail/prebuilt.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/service_registry.h"

namespace dmrt::rolex {

// Retrains full model groups on the memory node that holds the index. Compute nodes in other
// processes read this service's bit on that node (bench/indexes/rolex_deploy.h) and otherwise
// retrain themselves (Options::compute_retrain_fallback).
struct RetrainService {
  static constexpr ServiceInfo kInfo{
      "rolex", "ROLEX: retrains full model groups on the memory node that holds the index", 0};

  ServiceOptions options;

  template <class App>
  void add_flags(App& app) {
    add_ranged_flag(app, "--rolex-root-slot", options.root_slot,
                    "root slot the index publishes its meta in (rolex::Options::root_slot)", 0u,
                    static_cast<unsigned>(layout::kRootSlots - 1));
  }
  template <Transport T>
  void start(ServiceLauncher<T>& host) const {
    ServiceOptions so = options;
    host.launch(kInfo.name, 1, [so](ServiceContext<T>& ctx) { retrain_service(ctx, so); });
  }
  std::string describe() const { return "root slot " + std::to_string(options.root_slot); }
};

}  // namespace dmrt::rolex
