// nlohmann::json of a shm pool's provenance (dmrt/policies/shm/source.h): header-only, opt-in.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "dmrt/policies/shm/source.h"

namespace dmrt::shm {

// {"kind", "path", "device", "kernel_path", "filesystem", "source_bytes", "pool_bytes",
//  "device_numa_node", "numa_node", "numa_bound", "waits", "pages": {"sampled", "absent",
//  "by_numa_node": {"0": n, ...}}}; -1 is "none" for the node fields.
inline void to_json(nlohmann::json& j, const PoolProvenance& p) {
  nlohmann::json by_node = nlohmann::json::object();
  for (auto [node, pages] : p.pages_by_numa_node) by_node[std::to_string(node)] = pages;
  j = nlohmann::json{
      {"kind", p.kind},
      {"path", p.path},
      {"device", p.device},
      {"kernel_path", p.kernel_path},
      {"filesystem", p.filesystem},
      {"source_bytes", p.source_bytes},
      {"pool_bytes", p.pool_bytes},
      {"device_numa_node", p.device_numa_node},
      {"numa_node", p.numa_node},
      {"numa_bound", p.numa_bound},
      {"waits", p.waits},
      {"pages",
       {{"sampled", p.pages_sampled}, {"absent", p.pages_absent}, {"by_numa_node", by_node}}}};
}

}  // namespace dmrt::shm
