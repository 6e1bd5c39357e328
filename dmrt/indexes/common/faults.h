// Test-only fault switches: whether they are compiled in (meson option fault_injection).
#pragma once

namespace dmrt {

// Every index's Options::faults flag is read through injected(): in a build without
// DMRT_FAULT_INJECTION (an installed release build) the condition is a constant false, so the
// faulty branch is compiled out and a flag set by mistake has no effect.
#ifdef DMRT_FAULT_INJECTION
inline constexpr bool kFaultInjection = true;
#else
inline constexpr bool kFaultInjection = false;
#endif

constexpr bool injected(bool fault_switch) {
  return kFaultInjection && fault_switch;
}

}  // namespace dmrt
