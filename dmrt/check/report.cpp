// The verdict lines of dmrt-bench --verify and dmrt-check.
#include "dmrt/check/report.h"

#include <cstdio>

namespace dmrt {

int report_check(const CheckResult& res) {
  const char* verdict = res.linearizable ? "yes" : (res.unknown ? "unknown" : "no");
  std::printf("linearizable: %s\n", verdict);
  std::printf("operations checked: %llu (%llu keys, %llu scans) in %.2f s\n",
              static_cast<unsigned long long>(res.operations_checked),
              static_cast<unsigned long long>(res.keys_checked),
              static_cast<unsigned long long>(res.scans_checked), res.seconds);
  if (res.unknown && !res.unknown_reason.empty())
    std::printf("undecided because %s\n", res.unknown_reason.c_str());
  if (!res.linearizable) std::printf("%s\n", res.explain().c_str());
  if (res.linearizable) return 0;
  return res.unknown ? 2 : 1;
}

std::string mib_text(uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace dmrt
