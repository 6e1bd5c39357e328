// HStore's memory-node services, as registered with a node program
// (dmrt/runtime/service_registry.h): the hash-table server (`--service hstore-hts`) and the
// skiplist server (`--service hstore-sls`).
#pragma once

#include <string>

#include "dmrt/indexes/hstore/detail/options.h"
#include "dmrt/indexes/hstore/detail/prebuilt.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/service_registry.h"

namespace dmrt::hstore {

// Both servers wait for the index's meta (the root slot of the first memory node), then check that
// the index places them on this node and that the host started enough fibers for its logs (HTS)
// or its partitions and query fibers (SLS). Each has its own flags (--hstore-hts-*,
// --hstore-sls-*), so that either runs alone. A compute node in another process reads their bits
// on the index's HTS and SLS nodes (bench/indexes/hstore_deploy.h) before it relies on them.
namespace detail {
template <class App>
void add_server_flags(App& app, const std::string& prefix, ServerOptions& so, unsigned& fibers,
                      const char* fibers_help, unsigned min_fibers, unsigned max_fibers) {
  add_ranged_flag(
      app, prefix + "-root-slot", so.root_slot,
      "root slot of the first memory node holding the meta (hstore::Options::root_slot)", 0u,
      static_cast<unsigned>(layout::kRootSlots - 1));
  add_ranged_flag(app, prefix + "-fibers", fibers, fibers_help, min_fibers, max_fibers);
}
}  // namespace detail

struct HtsService {
  static constexpr ServiceInfo kInfo{
      "hstore-hts", "HStore: the hash-table server (writes, logs shipped to the SLS)", 1};

  ServerOptions options;
  unsigned fibers = 1 + Options{}.logs;  // one RPC fiber + one worker per update log

  template <class App>
  void add_flags(App& app) {
    detail::add_server_flags(app, "--hstore-hts", options, fibers,
                             "HTS fibers: 1 + the index's update logs (hstore::Options::logs)", 2,
                             1 + 64);
  }
  template <Transport T>
  void start(ServiceLauncher<T>& host) const {
    ServerOptions so = options;
    so.host_fibers = fibers;
    host.launch(kInfo.name, fibers, hts_service<T>(so));
  }
  std::string describe() const {
    return "root slot " + std::to_string(options.root_slot) + ", " + std::to_string(fibers) +
           " fibers";
  }
};

struct SlsService {
  static constexpr ServiceInfo kInfo{
      "hstore-sls", "HStore: the skiplist server (ordered copy, scans, degraded reads)", 2};

  ServerOptions options;
  // One RPC fiber + one applier per partition + the query fibers.
  unsigned fibers = 1 + Options{}.partitions + Options{}.query_fibers;

  template <class App>
  void add_flags(App& app) {
    detail::add_server_flags(app, "--hstore-sls", options, fibers,
                             "SLS fibers: 1 + the index's partitions + its query fibers", 3,
                             1 + 128);
  }
  template <Transport T>
  void start(ServiceLauncher<T>& host) const {
    ServerOptions so = options;
    so.host_fibers = fibers;
    host.launch(kInfo.name, fibers, sls_service<T>(so));
  }
  std::string describe() const {
    return "root slot " + std::to_string(options.root_slot) + ", " + std::to_string(fibers) +
           " fibers";
  }
};

}  // namespace dmrt::hstore
