// Processes that share one named shm pool: who runs which compute node, and how the compute
// processes of one run meet (one creates the index, the others wait for it, all start together).
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "policies/shm/pool.h"
#include "runtime/error.h"
#include "runtime/layout.h"
#include "runtime/local_memory.h"

namespace dmrt::shm {

// Whether process `pid` still exists (a process of another user counts: EPERM).
inline bool process_alive(uint64_t pid) {
  if (pid == 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// This process runs compute node `node` of the pool: its pid in the node's claim word
// (layout::kClaimOffset) for as long as the object lives. A second process asking for the same
// node is refused while the first is alive; the claim of a process that died is taken over.
class NodeClaim {
 public:
  NodeClaim(Pool& pool, NodeId node) : word_(pool.region(node).base + layout::kClaimOffset) {
    const uint64_t me = static_cast<uint64_t>(::getpid());
    for (;;) {
      uint64_t held = local::cas(word_, 0, me);
      if (held == 0 || held == me) break;
      if (process_alive(held))
        throw ConfigError("node " + std::to_string(node) + " of pool '" + pool.name() +
                          "' is already run by process " + std::to_string(held) +
                          " (each compute process needs its own --node)");
      if (local::cas(word_, held, me) == held) break;  // its owner died: take it over
    }
  }
  ~NodeClaim() { local::cas(word_, static_cast<uint64_t>(::getpid()), 0); }
  NodeClaim(const NodeClaim&) = delete;
  NodeClaim& operator=(const NodeClaim&) = delete;

 private:
  std::byte* word_;
};

// The compute processes of one run over a pool, through the words at layout::kGroupOffset of
// node 0. The creator (by convention the first compute node) creates and loads the index and then
// says it is ready, with a fingerprint of what it built; every other process waits for that and
// attaches, refusing a different fingerprint. Client ids are handed out from one counter so that
// they are unique across processes (value stamps, histories and lock owners need that). A barrier
// over a given number of members lets the run phases start together. A pool holds one run: a
// second creator finds the group used and is refused.
class ProcessGroup {
 public:
  // Says what the group is waiting for (printed by the caller, once a second).
  using Say = std::function<void(const std::string&)>;

  explicit ProcessGroup(Pool& pool) : pool_(pool), g_(pool.region(0).base + layout::kGroupOffset) {}

  // Claims the creator's part; throws when the pool's group was already used.
  void begin_create() {
    const uint64_t me = creating(static_cast<uint64_t>(::getpid()));
    uint64_t was = local::cas(w(kState), 0, me);
    if (was == 0) return;
    throw ConfigError("pool '" + pool_.name() + "' " + describe(was) +
                      ": one pool serves one run; start a fresh dmrt-node for the next one");
  }
  void ready(uint64_t fingerprint) {
    local::store_word(w(kFingerprint), fingerprint);
    local::store_word(w(kState), kReady);
  }
  // The creator gave up: the waiting processes stop too, with this news.
  void fail() { local::store_word(w(kState), kFailed); }

  // Waits until the creator is ready and checks that it built what this process expects.
  void await_ready(uint64_t fingerprint, double seconds, const Say& say) {
    wait(seconds, say, [&](std::string& why) {
      uint64_t s = local::load_word(w(kState));
      if (s == kReady) return true;
      check_not_failed(s);
      if ((s & 3) == kCreatingTag && !process_alive(s >> 2))
        throw ConfigError("the process creating the index (pid " + std::to_string(s >> 2) +
                          ") exited before it was ready");
      why = s == 0 ? "the first compute node to create the index"
                   : "process " + std::to_string(s >> 2) + " to create and load the index";
      return false;
    });
    if (local::load_word(w(kFingerprint)) != fingerprint)
      throw ConfigError(
          "the index in pool '" + pool_.name() +
          "' was built for another run: every compute process must be given the same --index, "
          "index flags, --keys, --value-size, --key-order, --keyset, --seed and workload (and "
          "one pool serves one run: start a fresh dmrt-node for the next)");
  }

  // `n` client ids unique across the processes of the pool; returns the first.
  uint32_t take_client_ids(uint32_t n) {
    return static_cast<uint32_t>(local::faa(w(kNextClient), n));
  }

  // Returns once `members` processes have called it (each round of `members` calls is one
  // barrier), or throws after `seconds` saying how many came.
  void barrier(uint64_t members, double seconds, const Say& say) {
    const uint64_t arrival = local::faa(w(kArrivals), 1);
    const uint64_t round_end = (arrival / members + 1) * members;
    wait(seconds, say, [&](std::string& why) {
      uint64_t now = local::load_word(w(kArrivals));
      if (now >= round_end) return true;
      check_not_failed(local::load_word(w(kState)));
      why = std::to_string(members - (round_end - now)) + " of " + std::to_string(members) +
            " compute processes to start the run";
      return false;
    });
  }

 private:
  enum : uint64_t { kState, kFingerprint, kNextClient, kArrivals };
  static_assert(kArrivals < layout::kGroupWords);
  static constexpr uint64_t kCreatingTag = 1, kReady = 2, kFailed = 3;
  static uint64_t creating(uint64_t pid) { return (pid << 2) | kCreatingTag; }

  std::byte* w(uint64_t i) const { return g_ + 8 * i; }

  std::string describe(uint64_t s) const {
    if (s == kReady) return "already holds the index of an earlier run";
    if (s == kFailed) return "holds the remains of a run whose creator failed";
    return "is being set up by process " + std::to_string(s >> 2);
  }
  void check_not_failed(uint64_t s) const {
    if (s == kFailed)
      throw ConfigError("the process that creates the index in pool '" + pool_.name() +
                        "' failed (see its output)");
  }

  // Polls `done` every millisecond; says what it waits for once a second; throws after `seconds`.
  template <class Done>
  void wait(double seconds, const Say& say, Done done) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto next_say = start + std::chrono::seconds(1);
    std::string why;
    while (!done(why)) {
      const auto now = clock::now();
      if (std::chrono::duration<double>(now - start).count() > seconds)
        throw ConfigError("gave up after " + std::to_string(static_cast<int>(seconds)) +
                          " s waiting for " + why + " (--attach-wait-seconds)");
      if (now >= next_say && say) {
        say("waiting for " + why);
        next_say = now + std::chrono::seconds(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  Pool& pool_;
  std::byte* g_;
};

}  // namespace dmrt::shm
