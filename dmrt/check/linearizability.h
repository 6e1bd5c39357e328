// Linearizability checker for key-value histories (dmrt/check/history.h) against the model of
// dmrt/runtime/kv.h. See docs/correctness.md for exactly what is checked.
//
// Point operations: linearizability is local, so the history is split per key and each key is
// checked on its own against a register with presence (absent | present(value hash)), with a
// Wing-Gong/Lowe depth-first search over linearization orders, memoizing visited
// (linearized set, model state) configurations. The index is assumed to start empty.
// Scans: checked per scan against the weaker guarantee range indexes give (see the docs).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dmrt/check/history.h"

namespace dmrt {

enum class Verdict : uint8_t {
  kLinearizable,
  kViolation,
  kUnknown,  // a budget (search steps, deadline, memory) ran out before a decision
};
const char* to_string(Verdict v);

struct CheckOptions {
  unsigned threads = 1;                      // keys checked in parallel (0 = hardware threads)
  uint64_t max_steps_per_key = 200'000'000;  // search steps before a key is declared unknown
  double deadline_seconds = 0;               // whole check; 0 = none. Unchecked keys: unknown
  // Memory the searches may hold at once (memo tables and stacks, over all threads); a search
  // that would exceed it stops and its key is unknown. 0 = none. An adversarial single-key
  // history can otherwise take many gigabytes without reaching a verdict.
  uint64_t memory_budget_bytes = uint64_t{4} << 30;
  bool check_scans = true;
  bool shrink = true;                  // minimize the failing history of a violation
  uint64_t shrink_steps = 20'000'000;  // budget of each check made while shrinking
  size_t max_rendered_ops = 80;        // explain() shows at most this many operations
};

struct CheckResult {
  Verdict verdict = Verdict::kLinearizable;
  bool linearizable = true;  // verdict == kLinearizable (false for violations AND unknown)
  bool unknown = false;      // verdict == kUnknown: no violation found, but not all keys decided
  uint64_t operations_checked = 0;  // point operations (every key) plus scans
  uint64_t keys_checked = 0;        // keys decided
  uint64_t scans_checked = 0;
  std::optional<Key> failing_key;         // point-operation violation on this key
  std::optional<Operation> failing_scan;  // or: this scan broke the scan guarantee
  std::string scan_problem;               // what was wrong with it
  // The violation's witness: for a key, a small sub-history of that key that is not linearizable
  // from ANY initial state (or, when no such sub-history exists, from the empty initial state);
  // for a scan, the scan and the operations on the key concerned.
  std::vector<Operation> smallest_failing_history;
  bool witness_from_any_state = false;
  std::vector<Key> unknown_keys;
  std::string unknown_reason;  // verdict == kUnknown: which budget ran out (and its size)
  uint64_t search_steps = 0;
  double seconds = 0;
  std::string details;  // the witness, rendered with values (filled by check_history)

  std::string explain() const;
};

// Checks a whole history. The history is not modified; with a nonzero clock_bound_ns every
// operation is checked widened by it (widen_operation), and a witness shows the widened times.
CheckResult check_history(const History& history, const CheckOptions& options = {});

// --- lower level, for tests and tools -----------------------------------------------------------

// Model state of one key.
struct KeyState {
  bool present = false;
  uint64_t value = 0;  // hash, when present
  friend bool operator==(const KeyState&, const KeyState&) = default;
};

// Checks point operations on ONE key (scans are ignored) from the given initial state.
// `steps` (in/out) accumulates the search steps; the budget applies to this call.
Verdict check_key(std::span<const Operation> ops, KeyState initial, uint64_t max_steps,
                  uint64_t* steps = nullptr);

// Linearizable from no initial state at all (every state is tried: absent, present with each
// value the operations mention, and present with any other value)?
Verdict check_key_any_state(std::span<const Operation> ops, uint64_t max_steps,
                            uint64_t* steps = nullptr);

}  // namespace dmrt
