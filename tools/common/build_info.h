// What built this dmrt tool: version, git commit, build type and compiler (tools/common/meson.build
// fills them in; the commit is "unknown" outside a git checkout).
#pragma once

namespace dmrt::build_info {

extern const char* const kVersion;       // meson project version
extern const char* const kGitCommit;     // full hash, "-dirty" when the tree had changes; "unknown"
extern const char* const kBuildType;     // meson buildtype (debugoptimized, release, ...)
extern const char* const kOptimization;  // -O level
extern const char* const kAssertions;    // "on" or "off" (b_ndebug)
extern const char* const kSanitize;      // b_sanitize ("none", "address,undefined", ...)
extern const char* const kCompiler;      // id and version, e.g. "gcc 12.2.0"
extern const char* const kTransports;    // compiled-in transports, comma-separated
extern const bool kNuma;
extern const bool kFaultInjection;

}  // namespace dmrt::build_info
