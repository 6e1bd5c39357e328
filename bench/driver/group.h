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
// A replacement of a dead process (incarnation k > 0, RunGroup) writes its own: "{node}" is "n.k".
inline std::string expand_node(const std::string& tmpl, NodeId n, unsigned incarnation = 0) {
  const std::string name =
      std::to_string(n) + (incarnation ? "." + std::to_string(incarnation) : std::string());
  std::string out = tmpl;
  for (size_t at = out.find("{node}"); at != std::string::npos; at = out.find("{node}", at))
    out.replace(at, 6, name);
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
  // Why this process may not replace a dead process of its rank ("" if it may): what it would
  // run is not one run phase it can join mid-way (--then, --warmup-ops).
  std::string no_replacement;
  NodeId node() const { return compute[rank]; }
  unsigned members() const { return static_cast<unsigned>(compute.size()); }
};

// Slots and incarnations. Each process of the run has a slot: a heartbeat word, a range of client
// ids and a process tag (1 + slot) that lock words name it by. Rank r's first process has slot r.
// Once a peer has declared it dead and fenced it (--on-peer-loss continue), a replacement may take
// its place mid-run (`dmrt-bench --attach --node N` again): it takes the next free slot, links it
// from the dead one's word, and runs its rank's share as incarnation 1 (then 2, ...), with its own
// client ids and files ("{node}" is "N.1"), so that locks and histories of the dead incarnation
// stay its own. A rank counts at a barrier by the last slot of its chain.
class RunGroup {
 public:
  using Say = std::function<void(const std::string&)>;
  // Heartbeat words: while the process runs, the barriers it passed (bits 56-62) and a counter
  // from 1 (bits 0-55); these when it has gone.
  static constexpr uint64_t kFinished = ~uint64_t{0};  // passed the final barrier
  static constexpr uint64_t kLeft = ~uint64_t{0} - 1;  // exited on an error
  static constexpr uint64_t kDead = ~uint64_t{0} - 2;  // declared dead by a peer, and fenced
  static constexpr uint64_t kReplaced = uint64_t{0xC0} << 56;  // dead, then replaced: | its slot
  static constexpr unsigned kMaxMembers = layout::kGroupWords - 8;  // slots after kHeartbeats
  static bool replaced(uint64_t v) { return v >> 56 == 0xC0; }
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
  // `n` client ids unique across the processes, the same `n` in each; returns the first: slot x n,
  // so that a client id names its process (slot_of_client).
  uint32_t take_client_ids(uint32_t n);
  // The slot whose process holds client `id` (ids from take_client_ids(n)).
  unsigned slot_of_client(uint32_t id) const { return ids_per_member_ ? id / ids_per_member_ : 0; }
  // This process's slot, and which incarnation of its rank it is (0: the first process).
  unsigned slot() const { return slot_; }
  unsigned incarnation() const { return incarnation_; }
  // The run phase began (every process, once past its start barrier): a replacement joins it.
  void run_started();
  // The creator, past the final barrier: from now on a replacement is refused. A replacement
  // that joined just before is waited for by await_all_done().
  void run_ended();
  // Every process the run has had, by rank and incarnation, as the words say now.
  struct Incarnation {
    unsigned rank, number, slot;
    bool dead;
  };
  std::vector<Incarnation> incarnations();
  // From now on a compute process whose heartbeat stops is fenced (GroupWords::fence) and
  // declared dead, and the others go on without it, instead of the run ending as lost. Not the
  // creator (it concludes the run), not a memory node, and not where fencing is impossible:
  // those are still lost.
  void survive_compute_loss() { survive_ = true; }
  // The slots declared dead so far (survive_compute_loss), and whether `slot` is one. A rank's
  // first process has slot = rank.
  std::vector<unsigned> dead() const;
  bool is_dead(unsigned slot) const;
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
  // kLost: the first peer lost, as a process saw it (1 + compute rank, kMemoryLost + node, or
  // kMemoryStopped + node), so
  // that the others name it too, not the process that left on finding it. kReplacements: slots
  // taken by replacements (members onward). kRunRound: the round of the run phase's start
  // barrier once it began, kRunDone once the creator concluded.
  enum : unsigned { kState, kFingerprint, kReplacements, kRunRound, kLost, kHeartbeats = 8 };
  static constexpr uint64_t kRunDone = ~uint64_t{0};
  static constexpr unsigned kBarrierShift = 56;
  static constexpr uint64_t kBeatMask = (uint64_t{1} << kBarrierShift) - 1;
  static constexpr unsigned kMaxBarriers = 127;
  static constexpr uint64_t kMemoryLost = uint64_t{1} << 32;
  static constexpr uint64_t kMemoryStopped = uint64_t{1} << 33;  // its dmrt-node exited cleanly
  static constexpr uint64_t kCreatingTag = 1, kReady = 2, kFailed = 3;

  // Every slot's word, as one read: the members', then the replacements'.
  std::vector<uint64_t> read_slots();
  // Rank r's slots in `words`, its first process's first, each replacement's after the slot it
  // replaced (the links of kReplaced words); notes each slot's rank and incarnation.
  std::vector<unsigned> chain(const std::vector<uint64_t>& words, unsigned r);
  // Rank r's last slot in `words` (its chain of replacements followed), and its incarnation.
  unsigned current_slot(const std::vector<uint64_t>& words, unsigned r,
                        unsigned* incarnation = nullptr);
  // This process replaces rank's dead incarnation `inc` in slot `dead_slot` (constructor).
  void replace(unsigned dead_slot, unsigned inc);
  std::string slot_name(unsigned slot) const;
  void beat();  // the heartbeat thread
  // Stores this process's heartbeat word (barriers passed, beat count); exits the process at
  // once when a peer declared it dead (it was fenced, or should have been).
  void publish(bool count_beat);
  void check_peers(std::chrono::steady_clock::time_point now);
  // Slot s's heartbeat stopped: fence it and declare it dead; false when it cannot be fenced.
  bool declare_dead(unsigned s, uint64_t stale);
  void note_dead(unsigned s, const std::string& how);
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
  unsigned slot_ = 0, incarnation_ = 0;
  std::atomic<unsigned> known_replacements_{0};  // read_slots(): as many as it last saw
  std::atomic<bool> survive_{false};
  std::vector<bool> dead_;                    // by slot (mu_)
  std::vector<std::pair<int, int>> slot_of_;  // slot -> (rank, incarnation); -1: not seen (mu_)

  struct Seen {
    uint64_t value = 0;
    std::chrono::steady_clock::time_point since{};
  };
  std::vector<Seen> members_seen_, memory_seen_;  // by slot, by memory node
  std::atomic<bool> finished_{false};
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;  // lost_, on_lost_
  std::condition_variable cv_;
  std::string lost_;
  std::function<void(const std::string&)> on_lost_;
  std::thread thread_;
};

}  // namespace dmrt::bench
