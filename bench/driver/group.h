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
  // Makes sure that the process running compute node `n` never writes again: true once it is
  // gone (killed here if it still ran). False where no such guarantee can be given (a process on
  // another host, a transport without a way): its peers must then not break what it holds.
  virtual bool fence(NodeId n) {
    (void)n;
    return false;
  }
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
  // Heartbeat words: while the process runs, the barriers it passed (bits 56-62) and a counter
  // from 1 (bits 0-55); these when it has gone.
  static constexpr uint64_t kFinished = ~uint64_t{0};  // passed the final barrier
  static constexpr uint64_t kLeft = ~uint64_t{0} - 1;  // exited on an error
  static constexpr uint64_t kDead = ~uint64_t{0} - 2;  // declared dead by a peer, and fenced
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
  // `n` client ids unique across the processes, the same `n` in each; returns the first: rank x n,
  // so that a client id names its process (rank_of_client).
  uint32_t take_client_ids(uint32_t n);
  // The rank whose process holds client `id` (ids from take_client_ids(n)).
  unsigned rank_of_client(uint32_t id) const { return ids_per_member_ ? id / ids_per_member_ : 0; }
  // From now on a compute process whose heartbeat stops is fenced (GroupWords::fence) and
  // declared dead, and the others go on without it, instead of the run ending as lost. Not the
  // creator (it concludes the run), not a memory node, and not where fencing is impossible:
  // those are still lost.
  void survive_compute_loss() { survive_ = true; }
  // The ranks declared dead so far (survive_compute_loss), and whether `rank` is one.
  std::vector<unsigned> dead() const;
  bool is_dead(unsigned rank) const;
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
  // that the others name it too, not the process that left on finding it. Words 2 and 3 are
  // unused (client ids and barrier arrivals were counters there).
  enum : unsigned { kState, kFingerprint, kLost = 4, kHeartbeats = 8 };
  static constexpr unsigned kBarrierShift = 56;
  static constexpr uint64_t kBeatMask = (uint64_t{1} << kBarrierShift) - 1;
  static constexpr unsigned kMaxBarriers = 127;
  static constexpr uint64_t kMemoryLost = uint64_t{1} << 32;
  static constexpr uint64_t kCreatingTag = 1, kReady = 2, kFailed = 3;

  void beat();  // the heartbeat thread
  // Stores this process's heartbeat word (barriers passed, beat count); exits the process at
  // once when a peer declared it dead (it was fenced, or should have been).
  void publish(bool count_beat);
  void check_peers(std::chrono::steady_clock::time_point now);
  // Member r's heartbeat stopped: fence it and declare it dead; false when it cannot be fenced.
  bool declare_dead(unsigned r, uint64_t stale);
  void note_dead(unsigned r, const std::string& how);
  // Every member whose word (`words`: the heartbeat words as just read) says a peer declared it
  // dead: noted here too. Whatever passes on such a word (a barrier, the end of the run) must
  // find the rank in dead(), not wait for this process's own heartbeat check to see it.
  void note_declared_dead(const std::vector<uint64_t>& words);
  void set_lost(const std::string& why, uint64_t code = 0);
  std::string lost_message(uint64_t code) const;
  std::string node_name(unsigned rank) const;
  template <class Done>
  void wait(std::chrono::microseconds max_pause, const Done& done);

  std::unique_ptr<GroupWords> w_;
  GroupSpec spec_;
  Say say_;
  std::mutex publish_mu_;  // barriers_, beats_ and the word they make
  uint64_t barriers_ = 0;  // barriers this process has passed
  uint64_t beats_ = 1;
  uint64_t published_ = 0;  // the word last stored
  uint32_t ids_per_member_ = 0;
  std::atomic<bool> survive_{false};
  std::vector<bool> dead_;  // by rank (mu_)

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
