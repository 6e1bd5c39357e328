// nlohmann::json conversions for the sim options and report (header-only, opt-in).
#pragma once

#include <nlohmann/json.hpp>

#include "dmrt/policies/sim/cluster.h"
#include "dmrt/policies/sim/options.h"

namespace dmrt::sim {

inline void to_json(nlohmann::json& j, const Options& o) {
  j = nlohmann::json{{"preset", o.preset_name},
                     {"compute_nodes", o.compute_nodes},
                     {"clients_per_node", o.clients_per_node},
                     {"memory_nodes", o.memory_nodes},
                     {"nic_mops", o.nic_mops},
                     {"nic_gbps", o.nic_gbps},
                     {"memory_nic_gbps", o.memory_nic_gbps},
                     {"header_bytes", o.header_bytes},
                     {"latency_ns", o.latency_ns},
                     {"cpu_ns", o.cpu_ns},
                     {"cpu_per_verb_ns", o.cpu_per_verb_ns},
                     {"poll_ns", o.poll_ns},
                     {"pcie_rtt_ns", o.pcie_rtt_ns},
                     {"serialize_atomics", o.serialize_atomics},
                     {"native_masked_cas", o.native_masked_cas},
                     {"service_access_ns", o.service_access_ns},
                     {"service_gbps", o.service_gbps},
                     {"service_msg_ns", o.service_msg_ns},
                     {"service_idle_ns", o.service_idle_ns}};
  // Only off the default: a coherent run's options keep their former shape.
  if (o.coherence != Coherence::kCoherent) {
    j["coherence"] = std::string(coherence_name(o.coherence));
    j["cache_bytes"] = o.cache_bytes;
    j["flush_line_ns"] = o.flush_line_ns;
    if (o.coherence == Coherence::kPartial) j["coherent_bytes"] = o.coherent_bytes;
  }
}

inline void to_json(nlohmann::json& j, const CoherenceCounters& c) {
  j = nlohmann::json{{"lines_invalidated", c.lines_invalidated},
                     {"lines_written_back", c.lines_written_back},
                     {"flush_ns", c.flush_ps / 1000},
                     {"stale_lines", c.stale_lines},
                     {"evicted_dirty", c.evicted_dirty}};
}

inline void to_json(nlohmann::json& j, const ServiceReport& s) {
  j = nlohmann::json{{"node", s.node},
                     {"role", s.role},
                     {"local_verbs", s.local_verbs},
                     {"local_bytes", s.local_bytes},
                     {"messages", s.messages},
                     {"wakeups", s.wakeups},
                     {"cpu_ns", s.cpu_ns},
                     {"cpu_util", s.cpu_util}};
}

inline void to_json(nlohmann::json& j, const NicReport& n) {
  j = nlohmann::json{{"node", n.node},
                     {"role", n.role},
                     {"ops", n.ops},
                     {"tx_bytes", n.tx_bytes},
                     {"rx_bytes", n.rx_bytes},
                     {"mops", n.mops},
                     {"tx_gbps", n.tx_gbps},
                     {"rx_gbps", n.rx_gbps},
                     {"iops_util", n.iops_util},
                     {"tx_util", n.tx_util},
                     {"rx_util", n.rx_util},
                     {"bw_util", n.bw_util},
                     {"avg_wait_ns", n.avg_wait_ns},
                     {"saturated", n.saturated},
                     {"saturated_at_ns", n.saturated_at_ns}};
}

inline void to_json(nlohmann::json& j, const Report& r) {
  j = nlohmann::json{{"start_ns", r.start_ns},
                     {"end_ns", r.end_ns},
                     {"elapsed_ns", r.elapsed_ns},
                     {"verbs", r.verbs},
                     {"messages", r.messages},
                     {"events", r.events},
                     {"nics", r.nics},
                     {"bottleneck", r.bottleneck},
                     {"bottleneck_util", r.bottleneck_util},
                     {"saturated", r.saturated},
                     {"saturated_first", r.saturated_first},
                     {"saturated_first_at_ns", r.saturated_first_at_ns}};
  // Only when services ran: runs without any keep their former shape.
  if (!r.services.empty()) j["services"] = r.services;
  if (r.coherence != Coherence::kCoherent) {
    j["coherence"] = r.coherence_counts;
    j["coherence"]["mode"] = std::string(coherence_name(r.coherence));
  }
}

}  // namespace dmrt::sim
