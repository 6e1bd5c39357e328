#include "dmrt/runtime/cluster.h"

#include <toml++/toml.h>
#include <cctype>
#include <sstream>

#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/machine.h"

namespace dmrt {

uint64_t MailboxGeometry::bytes_per_mailbox() const {
  // Two cache lines of head/tail counters, then the slots.
  return 128 + uint64_t{slots} * slot_bytes;
}

std::string role_name(NodeRole r) {
  return r == NodeRole::kMemory ? "memory" : "compute";
}

ClusterConfig ClusterConfig::embedded(unsigned memory_nodes, unsigned compute_nodes,
                                      uint64_t memory_bytes, uint64_t compute_bytes) {
  ClusterConfig c;
  for (unsigned i = 0; i < memory_nodes; ++i)
    c.nodes.push_back({NodeRole::kMemory,
                       memory_bytes,
                       -1,
                       "",
                       NodeSpec::default_device_memory(NodeRole::kMemory),
                       {}});
  for (unsigned i = 0; i < compute_nodes; ++i)
    c.nodes.push_back({NodeRole::kCompute,
                       compute_bytes,
                       -1,
                       "",
                       NodeSpec::default_device_memory(NodeRole::kCompute),
                       {}});
  c.validate();
  return c;
}

std::vector<NodeId> ClusterConfig::with_role(NodeRole r) const {
  std::vector<NodeId> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].role == r) out.push_back(static_cast<NodeId>(i));
  return out;
}

void ClusterConfig::validate() const {
  if (nodes.empty()) throw ConfigError("cluster has no nodes");
  if (nodes.size() > kMaxNodes)
    throw ConfigError("cluster has " + std::to_string(nodes.size()) + " nodes; at most " +
                      std::to_string(kMaxNodes) + " fit a GlobalAddress");
  if (memory_nodes().empty()) throw ConfigError("cluster has no memory node");
  // Limits first, so that no product below can overflow (each factor is at most 2^20).
  if (mailbox.mailboxes < 2 || mailbox.mailboxes > MailboxGeometry::kMaxMailboxes)
    throw ConfigError("mailbox.mailboxes must be in [2, " +
                      std::to_string(MailboxGeometry::kMaxMailboxes) + "]");
  if (mailbox.slots < 2 || mailbox.slots > MailboxGeometry::kMaxSlots ||
      (mailbox.slots & (mailbox.slots - 1)) != 0)
    throw ConfigError("mailbox.slots must be a power of two in [2, " +
                      std::to_string(MailboxGeometry::kMaxSlots) + "]");
  if (mailbox.slot_bytes < 128 || mailbox.slot_bytes > MailboxGeometry::kMaxSlotBytes ||
      mailbox.slot_bytes % 64 != 0)
    throw ConfigError("mailbox.slot_bytes must be a multiple of 64 in [128, " +
                      std::to_string(MailboxGeometry::kMaxSlotBytes) + "]");
  uint64_t heap = layout::heap_start(mailbox);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    if (n.region_bytes > GlobalAddress::kDeviceMemoryBit)
      throw ConfigError("node " + std::to_string(i) + ": region of " +
                        std::to_string(n.region_bytes) +
                        " bytes is larger than 2^47 bytes (the upper half of a node's 2^48 "
                        "offsets addresses its device memory)");
    if (n.device_memory_bytes > NodeSpec::kMaxDeviceMemoryBytes || n.device_memory_bytes % 64)
      throw ConfigError("node " + std::to_string(i) + ": device memory of " +
                        std::to_string(n.device_memory_bytes) +
                        " bytes: must be a multiple of 64 bytes, at most 1 GiB");
    if (n.region_bytes < heap + 4096)
      throw ConfigError("node " + std::to_string(i) + ": region of " +
                        std::to_string(n.region_bytes) + " bytes is smaller than its header and " +
                        "mailboxes need (" + std::to_string(heap + 4096) + " bytes)");
    n.far.validate("node " + std::to_string(i));
    if (n.far.enabled() && n.role != NodeRole::kMemory)
      throw ConfigError("node " + std::to_string(i) +
                        ": shm_latency_ns and shm_gbps model a memory node; this one is a "
                        "compute node");
  }
}

uint64_t ClusterConfig::formatted_bytes() const {
  // validate() bounds every factor: nodes <= 2^16, heap_start <= 2^48 / node.
  return layout::heap_start(mailbox) * nodes.size();
}

uint64_t parse_size_text(std::string_view s, const std::string& where) {
  auto bad = [&](const std::string& why) {
    return ConfigError(where + ": cannot read size \"" + std::string(s) + "\" (" + why + ")");
  };
  size_t pos = 0;
  uint64_t n = 0;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
    uint64_t d = static_cast<uint64_t>(s[pos++] - '0');
    if (n > GlobalAddress::kOffsetMask)  // before it can wrap
      throw ConfigError(where + ": size \"" + std::string(s) +
                        "\" is larger than 2^48 bytes (256 TiB)");
    n = n * 10 + d;
  }
  std::string_view unit = s.substr(pos);
  unsigned shift = 64;
  if (unit.empty() || unit == "B")
    shift = 0;
  else if (unit == "K" || unit == "KiB")
    shift = 10;
  else if (unit == "M" || unit == "MiB")
    shift = 20;
  else if (unit == "G" || unit == "GiB")
    shift = 30;
  else if (unit == "T" || unit == "TiB")
    shift = 40;
  if (pos == 0 || shift == 64) throw bad("use e.g. 64MiB, 4GiB");
  if (n == 0) throw bad("size must be positive");
  if (n > (GlobalAddress::kOffsetMask >> shift))
    throw ConfigError(where + ": size \"" + std::string(s) +
                      "\" is larger than 2^48 bytes (256 TiB)");
  return n << shift;
}

namespace {

uint64_t parse_size(const toml::node& v, const std::string& where) {
  if (auto i = v.value<int64_t>()) {
    if (*i <= 0) throw ConfigError(where + ": size must be positive");
    return static_cast<uint64_t>(*i);
  }
  auto s = v.value<std::string>();
  if (!s) throw ConfigError(where + ": expected a size such as 4096, \"64MiB\" or \"4GiB\"");
  return parse_size_text(*s, where);
}

std::string located(const std::string& origin, const toml::source_region& src) {
  std::ostringstream os;
  os << (origin.empty() ? "cluster config" : origin) << ":" << src.begin.line;
  return os.str();
}

}  // namespace

ClusterConfig ClusterConfig::from_toml_string(const std::string& text, const std::string& origin) {
  toml::table tbl;
  try {
    tbl = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << (origin.empty() ? "cluster config" : origin) << ":" << e.source().begin.line << ": "
       << e.description();
    throw ConfigError(os.str());
  }
  ClusterConfig c;
  if (auto mb = tbl["mailbox"].as_table()) {
    for (auto&& [k, v] : *mb) {
      std::string where = located(origin, v.source()) + ": mailbox." + std::string(k.str());
      auto i = v.value<int64_t>();
      if (!i || *i <= 0 || *i > (int64_t{1} << 31))
        throw ConfigError(where + ": expected a positive integer");
      if (k == "mailboxes")
        c.mailbox.mailboxes = static_cast<uint32_t>(*i);
      else if (k == "slots")
        c.mailbox.slots = static_cast<uint32_t>(*i);
      else if (k == "slot_bytes")
        c.mailbox.slot_bytes = static_cast<uint32_t>(*i);
      else
        throw ConfigError(where + ": unknown field");
    }
  }
  for (auto&& [k, v] : tbl) {
    if (k == "secret_file") {
      auto s = v.value<std::string>();
      if (!s || s->empty())
        throw ConfigError(located(origin, v.source()) + ": secret_file: expected a path");
      c.secret_file = *s;
      continue;
    }
    if (k != "mailbox" && k != "node")
      throw ConfigError(located(origin, v.source()) + ": unknown section '" + std::string(k.str()) +
                        "' (expected secret_file, [mailbox] or [[node]])");
  }
  auto* arr = tbl["node"].as_array();
  if (!arr)
    throw ConfigError((origin.empty() ? "cluster config" : origin) + ": no [[node]] entries");
  for (auto& el : *arr) {
    auto* t = el.as_table();
    std::string where = located(origin, el.source());
    if (!t) throw ConfigError(where + ": [[node]] must be a table");
    NodeSpec n;
    bool has_role = false, has_region = false, has_dm = false;
    for (auto&& [k, v] : *t) {
      std::string f = where + ": node." + std::string(k.str());
      if (k == "role") {
        auto r = v.value<std::string>();
        if (r == "memory")
          n.role = NodeRole::kMemory;
        else if (r == "compute")
          n.role = NodeRole::kCompute;
        else
          throw ConfigError(f + ": expected \"memory\" or \"compute\"");
        has_role = true;
      } else if (k == "region") {
        n.region_bytes = parse_size(v, f);
        has_region = true;
      } else if (k == "numa") {
        auto i = v.value<int64_t>();
        if (!i || *i < -1) throw ConfigError(f + ": expected a NUMA node number or -1");
        n.numa_node = static_cast<int>(*i);
      } else if (k == "device_memory") {
        n.device_memory_bytes = v.value<int64_t>() == 0 ? 0 : parse_size(v, f);
        has_dm = true;
      } else if (k == "address") {
        auto s = v.value<std::string>();
        if (!s) throw ConfigError(f + ": expected \"host:port\"");
        n.address = *s;
      } else if (k == "shm_latency_ns") {
        auto i = v.value<int64_t>();
        if (!i || *i < 0) throw ConfigError(f + ": expected a latency in ns (0 or more)");
        n.far.latency_ns = static_cast<uint64_t>(*i);
        n.far.validate(f);
      } else if (k == "shm_gbps") {
        auto d = v.value<double>();  // an integer reads as a double too
        if (!d) throw ConfigError(f + ": expected a bandwidth in Gbit/s (0 = unlimited)");
        n.far.gbps = *d;
        n.far.validate(f);
      } else {
        throw ConfigError(f +
                          ": unknown field (expected role, region, numa, address, "
                          "device_memory, shm_latency_ns, shm_gbps)");
      }
    }
    if (!has_role) throw ConfigError(where + ": node without role");
    if (!has_region)
      n.region_bytes = n.role == NodeRole::kMemory ? uint64_t{4} << 30 : uint64_t{64} << 20;
    if (!has_dm) n.device_memory_bytes = NodeSpec::default_device_memory(n.role);
    c.nodes.push_back(n);
  }
  c.validate();
  return c;
}

ClusterConfig ClusterConfig::from_toml_file(const std::string& path) {
  ClusterConfig c = from_toml_string(read_capped_file(path, kMaxFileBytes, "cluster file"), path);
  // A relative secret_file is named from the cluster file's folder, not the working directory.
  auto slash = path.rfind('/');
  if (!c.secret_file.empty() && c.secret_file[0] != '/' && slash != std::string::npos)
    c.secret_file = path.substr(0, slash + 1) + c.secret_file;
  return c;
}

}  // namespace dmrt
