// The inline cluster of `--nodes role:size@host:port,...`, read straight into a ClusterConfig.
#include <cctype>
#include <string>
#include <string_view>

#include "dmrt/policies/verbs/cluster.h"
#include "dmrt/runtime/error.h"

namespace dmrt::verbs {

namespace {

bool host_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '.' || ch == '-' || ch == '_';
}

// Checks "host:port" (host a name, an IPv4 address or a bracketed IPv6 one; port 1-65535) and
// returns it unchanged.
std::string parse_address(std::string_view a, const std::string& where) {
  auto colon = a.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == a.size())
    throw ConfigError(where + ": address '" + std::string(a) + "' is not host:port");
  std::string_view host = a.substr(0, colon), port = a.substr(colon + 1);
  bool ok = true;
  if (host.front() == '[') {
    ok = host.size() > 2 && host.back() == ']';
    for (char ch : host.substr(1, host.size() - 2))
      ok = ok && (std::isxdigit(static_cast<unsigned char>(ch)) || ch == ':' || ch == '.');
  } else {
    for (char ch : host) ok = ok && host_char(ch);
  }
  if (!ok)
    throw ConfigError(where + ": host '" + std::string(host) +
                      "' is not a host name, an IPv4 address or a bracketed IPv6 address");
  unsigned long p = 0;
  for (char ch : port) {
    if (ch < '0' || ch > '9')
      throw ConfigError(where + ": port '" + std::string(port) + "' is not a number");
    p = p * 10 + static_cast<unsigned long>(ch - '0');
    if (p > 65535) break;
  }
  if (p == 0 || p > 65535)
    throw ConfigError(where + ": port '" + std::string(port) + "' is out of range (1-65535)");
  return std::string(a);
}

}  // namespace

ClusterConfig parse_cluster_arg(const std::string& text) {
  // A control character (a newline from a shell variable, say) is never part of a node.
  for (size_t i = 0; i < text.size(); ++i)
    if (std::iscntrl(static_cast<unsigned char>(text[i])))
      throw ConfigError("--nodes: control character (code " +
                        std::to_string(static_cast<unsigned char>(text[i])) + ") at offset " +
                        std::to_string(i));
  ClusterConfig c;
  std::string_view rest = text;
  for (size_t index = 0;; ++index) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    const std::string where =
        "--nodes entry " + std::to_string(index + 1) + " '" + std::string(item) + "'";
    auto colon = item.find(':');
    auto at = item.find('@');
    if (colon == std::string_view::npos || at == std::string_view::npos || colon > at ||
        item.find('@', at + 1) != std::string_view::npos)
      throw ConfigError(where + ": expected role:size@host:port");
    NodeSpec n;
    std::string_view role = item.substr(0, colon);
    if (role == "memory")
      n.role = NodeRole::kMemory;
    else if (role == "compute")
      n.role = NodeRole::kCompute;
    else
      throw ConfigError(where + ": role '" + std::string(role) + "' is not memory or compute");
    n.region_bytes = parse_size_text(item.substr(colon + 1, at - colon - 1), where);
    n.device_memory_bytes = NodeSpec::default_device_memory(n.role);
    n.address = parse_address(item.substr(at + 1), where);
    c.nodes.push_back(std::move(n));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  try {
    c.validate();
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("--nodes: ") + e.what());
  }
  return c;
}

}  // namespace dmrt::verbs
