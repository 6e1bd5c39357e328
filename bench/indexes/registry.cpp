// The list of registered indexes (bench/indexes/registry.h).
#include "bench/indexes/registry.h"

#include <algorithm>
#include <stdexcept>

namespace dmrt::bench {
namespace {

// Function-local, so that it exists before the first static registrar of any unit runs.
std::vector<IndexEntry>& entries() {
  static std::vector<IndexEntry> list;
  return list;
}

}  // namespace

void register_index(const IndexEntry& e) {
  auto& list = entries();
  for (const IndexEntry& x : list)
    if (x.name == e.name)
      throw std::logic_error("dmrt-bench: index " + std::string(e.name) + " registered twice");
  // Stable: equal ranks keep their names' order, whatever the order units initialise in.
  const auto at = std::find_if(list.begin(), list.end(), [&](const IndexEntry& x) {
    return x.rank > e.rank || (x.rank == e.rank && x.name > e.name);
  });
  list.insert(at, e);
}

const std::vector<IndexEntry>& registered_indexes() {
  return entries();
}

const IndexEntry* find_index(std::string_view name) {
  for (const IndexEntry& e : entries())
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<IndexInfo> index_infos() {
  std::vector<IndexInfo> out;
  for (const IndexEntry& e : entries())
    out.push_back({std::string(e.name), std::string(e.summary), e.local, e.scan, e.byte_keys});
  return out;
}

}  // namespace dmrt::bench
