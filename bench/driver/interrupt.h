// SIGINT and SIGTERM during a dmrt-bench run: the first stops the workers at their next operation
// so that the phases measured so far, and the interrupted one, are still reported; a second ends
// the process at once.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>

namespace dmrt::bench {

namespace detail {
// The first signal caught (0: none). A lock-free atomic: the one kind of shared state a signal
// handler may touch.
inline std::atomic<int> g_interrupt{0};
static_assert(std::atomic<int>::is_always_lock_free);

template <std::size_t N>
void say_from_handler(const char (&text)[N]) {
  // write(2) is async-signal-safe; stdio is not.
  ssize_t ignored = ::write(STDERR_FILENO, text, N - 1);
  (void)ignored;
}

inline void on_interrupt(int sig) {
  int none = 0;
  if (!g_interrupt.compare_exchange_strong(none, sig)) {
    say_from_handler("dmrt-bench: second signal: exiting at once\n");
    ::_exit(128 + sig);
  }
  say_from_handler(
      "dmrt-bench: interrupted: stopping at the next operation and writing what was measured "
      "(send it again to exit at once)\n");
}
}  // namespace detail

// From here on SIGINT and SIGTERM interrupt the run instead of killing the process.
inline void catch_interrupts() {
  struct sigaction sa {};
  sa.sa_handler = detail::on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // no EINTR for the rest of the program to handle
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

// The signal that interrupted the run, or 0.
inline int interrupted() {
  return detail::g_interrupt.load(std::memory_order_relaxed);
}

inline const char* signal_name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

// A shell's code for a process ended by `sig`: 130 for SIGINT, 143 for SIGTERM.
inline int interrupted_exit_code(int sig) {
  return 128 + sig;
}

}  // namespace dmrt::bench
