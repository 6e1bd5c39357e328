// Which cache-flush instructions this CPU offers (policies/shm/coherence.h).
#include "policies/shm/coherence.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace dmrt::shm {

FlushInstructions FlushInstructions::detect() {
  FlushInstructions f;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.clflushopt = (b >> 23) & 1;
    f.clwb = (b >> 24) & 1;
  }
#endif
  return f;
}

std::string FlushInstructions::describe() const {
#if defined(__x86_64__)
  std::string inval = clflushopt ? "clflushopt" : "clflush";
  std::string wb = clwb ? "clwb" : inval;
  return inval + " before reads, " + wb + " after writes, mfence/sfence";
#else
  return "fences only (no cache-line flush instructions on this architecture)";
#endif
}

}  // namespace dmrt::shm
