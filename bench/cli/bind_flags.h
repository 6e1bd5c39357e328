// Declared flags (bench/cli/flag_list.h) as CLI11 options: the one place they meet CLI11.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "bench/cli/flag_list.h"

namespace dmrt::bench {

// `--name on|off` bound to `flag`. CLI11 also accepts true/false, yes/no and 1/0.
CLI::Option* add_switch(CLI::App& g, const std::string& name, bool& flag, const std::string& help);

// Adds every flag of `list` to `g`. The options write straight into the declared values.
void bind_flags(CLI::App& g, FlagList& list);

// Once `g` is parsed: marks each flag of `list` given or not.
void mark_given(const CLI::App& g, FlagList& list);

}  // namespace dmrt::bench
