// --version for every dmrt tool: what built it, in one line (tools/common/build_info.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

#include "tools/common/build_info.h"

namespace dmrt::tools {

// "dmrt-bench 0.1.0 (git <hash>; release -O3, assertions off; gcc 12.2.0; transports shm,sim)".
inline std::string version_text(std::string_view tool) {
  std::string s = std::string(tool) + " " + build_info::kVersion + " (git " +
                  build_info::kGitCommit + "; " + build_info::kBuildType + " -O" +
                  build_info::kOptimization + ", assertions " + build_info::kAssertions + "; " +
                  build_info::kCompiler + "; transports " + build_info::kTransports;
  if (std::string_view(build_info::kSanitize) != "none")
    s += "; sanitize " + std::string(build_info::kSanitize);
  return s + ")";
}

inline void add_version_flag(CLI::App& app, std::string_view tool) {
  app.set_version_flag("--version", version_text(tool),
                       "Print what built this program (version, commit, build), then exit");
}

}  // namespace dmrt::tools
