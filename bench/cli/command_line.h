// dmrt-bench's command line: Options and what the command line holds beyond them (the modes that
// end before a run, every index's flags), and the options whose presence the checks ask about.
// bench/cli/flags.cpp adds the flags, bench/cli/resolve.cpp checks and resolves them.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/cli/flag_list.h"
#include "bench/cli/options.h"
#include "bench/indexes/registry.h"

namespace dmrt::bench {

struct CommandLine {
  Options opt;
  FlagList option_flags;                  // Options' fields as flags (bench/cli/options.h)
  std::vector<FlagList> transport_flags;  // those a transport declares from its own fields

  // Modes that end before a run.
  std::vector<std::string> merge;  // --merge FILE...
  bool merge_partial = false;
  std::string compare;  // --compare LIST
  unsigned compare_rounds = 3;
  bool list = false;              // --list-indexes
  std::string write_config_path;  // --write-config FILE
  std::string help_index;         // --help-index NAME
  std::string help_transport;     // --help-transport NAME
  bool help_all = false;          // --help-all

  // Every index's flags, in registered_indexes() order, and the --help section of each index
  // that has flags.
  std::vector<std::unique_ptr<IndexFlags>> index_flags;
  std::vector<std::pair<std::string, CLI::App*>> flag_groups;

  // Flags whose presence the checks ask about.
  CLI::Option* ops = nullptr;
  CLI::Option* dist = nullptr;
  CLI::Option* key_format = nullptr;
  CLI::Option* cluster = nullptr;
  CLI::Option* memory_mb = nullptr;
  CLI::Option* compute_mb = nullptr;
  CLI::Option* memory_nodes = nullptr;
  CLI::Option* compute = nullptr;
  CLI::Option* stall = nullptr;
  CLI::Option* verify_max_ops = nullptr;
  CLI::Option* config_file = nullptr;
  CLI::Option* compare_opt = nullptr;
  std::vector<CLI::Option*> shm_only;  // flags of --transport shm alone
};

// The flags of index `e` (one of registered_indexes()).
inline const IndexFlags& index_flags_of(const CommandLine& c, const IndexEntry& e) {
  return *c.index_flags[static_cast<size_t>(&e - registered_indexes().data())];
}

// The --help section of an index's flags (--help-index NAME).
std::string index_section(const IndexEntry& e);

// Adds every dmrt-bench flag to `app`, writing into `c`.
void add_flags(CLI::App& app, CommandLine& c);

}  // namespace dmrt::bench
