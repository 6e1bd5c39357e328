// The transports dmrt-bench registered (bench/transports/registry.h).
#include "bench/transports/registry.h"

#include <algorithm>

#include "dmrt/policies/transports.h"

namespace dmrt::bench {
namespace {

std::vector<TransportEntry>& entries() {
  static std::vector<TransportEntry> list;
  return list;
}

size_t place(std::string_view name) {
  auto it = std::find(kKnownTransports.begin(), kKnownTransports.end(), name);
  return static_cast<size_t>(it - kKnownTransports.begin());
}

}  // namespace

void register_transport(const TransportEntry& e) {
  std::vector<TransportEntry>& list = entries();
  list.push_back(e);
  std::stable_sort(list.begin(), list.end(), [](const TransportEntry& a, const TransportEntry& b) {
    return place(a.name) < place(b.name);
  });
}

const std::vector<TransportEntry>& registered_transports() {
  return entries();
}

const TransportEntry* find_transport(std::string_view name) {
  for (const TransportEntry& e : entries())
    if (e.name == name) return &e;
  return nullptr;
}

std::string transport_unavailable(std::string_view name) {
  std::string built, known;
  for (const TransportEntry& e : entries())
    built += (built.empty() ? "" : ", ") + std::string(e.name);
  for (std::string_view k : kKnownTransports) known += (known.empty() ? "" : ", ") + std::string(k);
  if (place(name) < kKnownTransports.size())
    return "transport " + std::string(name) +
           " is not available in this dmrt-bench build (compiled in: " + built + ")";
  return "unknown transport " + std::string(name) + " (choices: " + known + ")";
}

}  // namespace dmrt::bench
