// dmrt-bench's exit codes and its usage-error helper, shared by main.cpp and the run side.
#pragma once

#include <string>

namespace dmrt::bench {

// Exit codes: 0 success, 1 a run-time failure (index error, pool exhausted...), 2 bad usage or a
// request this build / index cannot serve.
inline constexpr int kUsage = 2;

// Prints "dmrt-bench: msg" on stderr and returns kUsage.
int usage_error(const std::string& msg);

}  // namespace dmrt::bench
