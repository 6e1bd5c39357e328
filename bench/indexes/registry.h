// Every index dmrt-bench offers registers itself here, from its own file (bench/indexes/NAME.cpp,
// bench/peers/NAME.cpp): its name, its flags and its run side. main.cpp reads the list; nothing
// else names an index.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/cli/flag_list.h"

namespace dmrt::bench {

struct RunRequest;

// An index's flags as the command line fills them and its run side reads them.
class IndexFlags {
 public:
  virtual ~IndexFlags() = default;
  virtual FlagList& list() = 0;
  // Cross-flag usage errors once the command line is parsed ("" when fine).
  virtual std::string check() const = 0;
};

struct IndexEntry {
  std::string_view name;     // --index NAME
  std::string_view title;    // the heading of its flags in --help
  std::string_view summary;  // one line for --help
  // Place in --help, --list-indexes and --compare all: the disaggregated-memory indexes (below
  // 100), then the local peers. The first is --index's default.
  int rank = 100;
  // Derived from its handle and adapter, never declared.
  bool local = false;      // a single-machine peer (no verbs at all)
  bool scan = false;       // its handle serves scans
  bool byte_keys = false;  // its handle takes byte-string keys (--key-size > 8)
  std::unique_ptr<IndexFlags> (*make_flags)(std::string_view name) = nullptr;
  int (*run)(const RunRequest&, const IndexFlags&) = nullptr;
};

// Adds an index to the list; called by a static object in the index's file (RegisterIndex).
void register_index(const IndexEntry& e);

// Every registered index, by rank.
const std::vector<IndexEntry>& registered_indexes();
// The index named `name`, or null.
const IndexEntry* find_index(std::string_view name);

// An entry's facts as plain strings, for the reports (--compare, --list-indexes).
struct IndexInfo {
  std::string name;
  std::string summary;
  bool local;
  bool scan;
  bool byte_keys;
};
std::vector<IndexInfo> index_infos();

struct RegisterIndex {
  explicit RegisterIndex(const IndexEntry& e) { register_index(e); }
};

}  // namespace dmrt::bench
