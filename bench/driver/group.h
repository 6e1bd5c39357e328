// The compute processes of one experiment (one dmrt-bench per compute node, on one host or on
// many): which one creates and loads the index, client ids unique across them, a barrier before
// every phase and after the last, and a heartbeat per process so that a lost peer ends the others
// with an error naming it instead of a hang. Written once over GroupWords, the words of the run's
// group in the first memory node's header (layout::kGroupOffset), which each transport reaches its
// own way (shm: atomics on the mapped pool; verbs: one-sided verbs from a thread slot of its own).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::bench {

// `tmpl` with every "{node}" replaced by node n: one command line names each process's files.
inline std::string expand_node(const std::string& tmpl, NodeId n) {
  std::string out = tmpl;
  for (size_t at = out.find("{node}"); at != std::string::npos; at = out.find("{node}", at))
    out.replace(at, 6, std::to_string(n));
  return out;
}

// The group's words as a transport reaches them. Every call may come from any thread.
class GroupWords {
 public:
  virtual ~GroupWords() = default;
  // Word i of the group block (i < layout::kGroupWords), with the transport's 8-byte atomics.
  virtual uint64_t load(unsigned i) = 0;
  virtual void store(unsigned i, uint64_t v) = 0;
  virtual uint64_t cas(unsigned i, uint64_t expected, uint64_t desired) = 0;
  virtual uint64_t faa(unsigned i, uint64_t add) = 0;
  // Words [first, first + n) in one read (the members' heartbeats).
  virtual void load_range(unsigned first, unsigned n, uint64_t* out) = 0;
  // Node m's heartbeat word (layout::kHeartbeatOffset), bumped by the process that serves it;
  // throws when the node cannot be reached.
  virtual uint64_t node_heartbeat(NodeId m) = 0;
};

// A peer of the experiment is gone: a compute process stopped its heartbeat or left, or a memory
// node stopped serving. what() names it.
class PeerLost : public Error {
 public:
  using Error::Error;
};

struct GroupSpec {
  std::vector<NodeId> compute;  // the experiment's compute nodes, by rank (one process each)
  unsigned rank = 0;            // this process's position in `compute`
  std::vector<NodeId> memory;   // memory nodes whose serving process is watched
  double wait_seconds = 60;     // a barrier, or the wait for the creator (--attach-wait-seconds)
  double peer_timeout = 10;     // a heartbeat unchanged this long is a lost peer
  std::string label;            // "pool 'x'" or "the cluster": for messages
  NodeId node() const { return compute[rank]; }
  unsigned members() const { return static_cast<unsigned>(compute.size()); }
};

class RunGroup {
 public:
  using Say = std::function<void(const std::string&)>;
  // Heartbeat values: a counter from 1 while the process runs; these when it has gone.
  static constexpr uint64_t kFinished = ~uint64_t{0};               // passed the final barrier
  static constexpr uint64_t kLeft = ~uint64_t{0} - 1;               // exited on an error
  static constexpr unsigned kMaxMembers = layout::kGroupWords - 8;  // words after kHeartbeats
  // Beats and peer checks: a write and a read of the members' words (plus one per watched memory
  // node) per process per beat.
  static constexpr auto kBeat = std::chrono::milliseconds(200);

  RunGroup(std::unique_ptr<GroupWords> words, GroupSpec spec, Say say);
  // A process that ends without finish() (an error unwinding) tells the others it left.
  ~RunGroup();
  RunGroup(const RunGroup&) = delete;
  RunGroup& operator=(const RunGroup&) = delete;

  const GroupSpec& spec() const { return spec_; }
  bool creator() const { return spec_.rank == 0; }
  void say(const std::string& s) const {
    if (say_) say_(s);
  }

  // The creator's part: claims the group (throws when the pool or node already served a run),
  // then says it is ready with a fingerprint of what it built, or that it failed.
  void begin_create();
  void ready(uint64_t fingerprint);
  void fail();
  // The others: wait for the creator and check that it built what this process expects.
  void await_ready(uint64_t fingerprint);
  // `n` client ids unique across the processes; returns the first.
  uint32_t take_client_ids(uint32_t n);
  // Returns once every member has called it as often (each round is one barrier); throws
  // PeerLost when a member is lost meanwhile, ConfigError after wait_seconds.
  void barrier(const std::string& before_what);
  // After the final barrier: leaving is no longer a loss.
  void finish();
  // The creator, before it stops the memory nodes: waits until every member has finished or
  // left (at most wait_seconds).
  void await_all_done();

  // A lost peer (empty: none), set by the heartbeat thread; `on_lost` runs once on that thread.
  std::string lost() const;
  void on_lost(std::function<void(const std::string&)> f);

 private:
  // kLost: the first peer lost, as a process saw it (1 + compute rank, or kMemoryLost + node), so
  // that the others name it too, not the process that left on finding it.
  enum : unsigned { kState, kFingerprint, kNextClient, kArrivals, kLost, kHeartbeats = 8 };
  static constexpr uint64_t kMemoryLost = uint64_t{1} << 32;
  static constexpr uint64_t kCreatingTag = 1, kReady = 2, kFailed = 3;

  void beat();  // the heartbeat thread
  void check_peers(std::chrono::steady_clock::time_point now);
  void set_lost(const std::string& why, uint64_t code = 0);
  std::string lost_message(uint64_t code) const;
  std::string node_name(unsigned rank) const;
  template <class Done>
  void wait(std::chrono::microseconds max_pause, const Done& done);

  std::unique_ptr<GroupWords> w_;
  GroupSpec spec_;
  Say say_;
  uint64_t barriers_ = 0;  // barriers this process has passed

  struct Seen {
    uint64_t value = 0;
    std::chrono::steady_clock::time_point since{};
  };
  std::vector<Seen> members_seen_, memory_seen_;
  std::atomic<bool> finished_{false};
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;  // lost_, on_lost_
  std::condition_variable cv_;
  std::string lost_;
  std::function<void(const std::string&)> on_lost_;
  std::thread thread_;
};

}  // namespace dmrt::bench
