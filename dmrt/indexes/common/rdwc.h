// Read delegation and write combining (RDWC, from SMART, OSDI '23; DMTree §4.1): same-key searches
// or updates on one compute node share one remote operation.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dmrt/indexes/common/spin_lock.h"
#include "dmrt/indexes/common/striped.h"
#include "dmrt/runtime/address.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::rdwc {

// Per compute node, shared by all its threads and fibers. A hashed slot tracks the operation in
// flight for one key (a search or an update). Requests of the same kind on the same key that
// arrive while it runs queue for the NEXT round (at most `limit` of them; more run directly):
// when the running operation finishes, one queued request leads the next round and the others
// take its result. Because a round starts only after all its members were invoked, the shared
// result is one every member may legally return (linearizable): a delegated search returns a
// value read after it was invoked; combined updates take effect at the leader's single write,
// in queue order, so the last queued value stands and every member returns the same status.
// The slot mutex is held for a few instructions, never across a verb.
//
// Only searches and updates go through it. An insert or a delete returns a status that depends on
// the operations linearized before it (two inserts of one absent key cannot both succeed), so a
// shared result would not be linearizable: indexes run them directly.
class Combiner {
 public:
  // Slots and round size of CHIME's, Sherman's and ROLEX's combiners. No bound on a round: as in
  // SMART's per-key local queue, every request of a key that arrives while one runs waits for the
  // next round, so at most one remote operation per key and kind runs per compute node (with a
  // bound, the overflow would run directly and contend for the remote leaf lock: under zipfian
  // 0.99 with 64 clients per node, hundreds of them on the hottest key). DMTree's paper bounds
  // its rounds (`batch_limit`).
  static constexpr size_t kSlots = 4096;
  static constexpr uint32_t kLimit = std::numeric_limits<uint32_t>::max();

  Combiner(size_t slots, uint32_t limit) : slots_(slots ? slots : 1), limit_(limit) {}

  // `direct(value, out)` performs the operation remotely. Returns its (possibly shared) result.
  template <class C, class F>
  bool run(C& c, Key k, bool write, std::string_view value, std::string* out, F&& direct) {
    Slot& s = slots_[mix64(k ^ (write ? 0x51ed27 : 0)) % slots_.size()];
    return run_in(c, s, Name{k, {}, false}, write, value, out, direct);
  }
  // The same for a byte-string key (dmrt/runtime/key_bytes.h): requests share a round only when
  // their keys are the same bytes, never on a hash alone. The slot keeps its own copy of the key
  // (its string's capacity is reused, so a warm slot does not allocate).
  template <class C, class F>
  bool run(C& c, std::string_view k, bool write, std::string_view value, std::string* out,
           F&& direct) {
    Slot& s = slots_[mix64(hash_bytes(k) ^ (write ? 0x51ed27 : 0)) % slots_.size()];
    return run_in(c, s, Name{0, k, true}, write, value, out, direct);
  }

  // Members that took another's result: all, searches (delegated), updates (combined).
  uint64_t shared() const { return shared_.load(std::memory_order_relaxed); }
  uint64_t delegated() const { return delegated_.load(std::memory_order_relaxed); }
  uint64_t combined() const { return combined_.load(std::memory_order_relaxed); }
  // Operations that found their slot held by another key (or the round full) and ran directly.
  uint64_t direct_runs() const { return direct_runs_.load(std::memory_order_relaxed); }

  // The figures under the names the indexes report ("rdwc_*"), added to `s`.
  void add_stats(IndexStats& s) const {
    s["rdwc_delegated"] += static_cast<double>(delegated());
    s["rdwc_combined"] += static_cast<double>(combined());
    s["rdwc_direct"] += static_cast<double>(direct_runs());
  }

 private:
  struct Round {
    std::atomic<int> state{0};  // 0 queued, 1 ready to lead, 2 led, 3 done
    std::string value;          // update: value to write (last queued wins)
    std::string result;         // search: value read
    bool ok = false;
    std::exception_ptr error;  // the leader's failure, shared by every member
  };
  struct alignas(64) Slot {
    btree::SpinLock m;  // taken twice per operation, for a few instructions
    bool active = false, write = false, bytes = false;
    Key key = 0;
    std::string key_bytes;  // the key when `bytes`
    uint32_t queued = 0;
    std::shared_ptr<Round> next;
  };
  // The key a request names: an integer, or bytes.
  struct Name {
    Key k;
    std::string_view b;
    bool bytes;
    bool held_by(const Slot& s) const {
      return s.bytes == bytes && (bytes ? s.key_bytes == b : s.key == k);
    }
    void hold(Slot& s) const {
      s.bytes = bytes;
      if (bytes)
        s.key_bytes.assign(b);
      else
        s.key = k;
    }
  };

  template <class C, class F>
  bool run_in(C& c, Slot& s, const Name& name, bool write, std::string_view value, std::string* out,
              F& direct) {
    std::shared_ptr<Round> r;
    bool lead = false;
    {
      std::lock_guard l(s.m);
      if (!s.active) {
        s.active = true;
        name.hold(s);
        s.write = write;
        lead = true;
      } else if (name.held_by(s) && s.write == write && s.queued < limit_) {
        if (!s.next) s.next = std::make_shared<Round>();
        if (write) s.next->value.assign(value);
        ++s.queued;
        r = s.next;
      }
    }
    if (!lead && !r) {  // another key holds the slot, or the round is full: run directly
      direct_runs_.fetch_add(1, std::memory_order_relaxed);
      return direct(value, out);
    }
    if (!r) {  // leader of the current round
      bool ok;
      try {
        ok = direct(value, out);
      } catch (...) {
        finish(s);  // the queued round still runs, led by one of its own members
        throw;
      }
      finish(s);
      return ok;
    }
    int st;
    while ((st = r->state.load(std::memory_order_acquire)) == 0) c.pause();
    int ready = 1;
    if (st == 1 && r->state.compare_exchange_strong(ready, 2, std::memory_order_acq_rel)) {
      std::string result;
      try {
        r->ok = direct(r->value, write ? nullptr : &result);
      } catch (...) {
        // The members of this round share its outcome, the error included: they must not wait
        // for a result that will never come (nor may the slot stay busy for ever).
        r->error = std::current_exception();
      }
      if (!write) r->result = std::move(result);
      r->state.store(3, std::memory_order_release);
      finish(s);
      if (r->error) std::rethrow_exception(r->error);
      if (out) *out = r->result;
      return r->ok;
    }
    while (r->state.load(std::memory_order_acquire) != 3) c.pause();
    if (r->error) std::rethrow_exception(r->error);
    shared_.fetch_add(1, std::memory_order_relaxed);
    (write ? combined_ : delegated_).fetch_add(1, std::memory_order_relaxed);
    if (out) *out = r->result;
    return r->ok;
  }

  void finish(Slot& s) {
    std::shared_ptr<Round> nr;
    {
      std::lock_guard l(s.m);
      nr = std::move(s.next);
      s.next.reset();
      s.queued = 0;
      if (!nr) s.active = false;
    }
    if (nr) nr->state.store(1, std::memory_order_release);
  }

  std::vector<Slot> slots_;
  uint32_t limit_;
  // Striped: a hot key's members on every thread add to them (striped.h).
  btree::StripedCounter shared_, delegated_, combined_, direct_runs_;
};

// One Combiner per compute node, for an index object that all compute nodes share (ROLEX's):
// a handle looks its node's up once, when it is made (never on an operation's path).
class PerNode {
 public:
  PerNode(size_t slots, uint32_t limit) : slots_(slots), limit_(limit) {}

  Combiner& of(NodeId node) {
    std::lock_guard l(m_);
    auto& c = by_node_[node];
    if (!c) c = std::make_unique<Combiner>(slots_, limit_);
    return *c;
  }
  void add_stats(IndexStats& s) const {
    std::lock_guard l(m_);
    for (auto& [node, c] : by_node_) c->add_stats(s);
  }

 private:
  size_t slots_;
  uint32_t limit_;
  mutable std::mutex m_;
  std::map<NodeId, std::unique_ptr<Combiner>> by_node_;
};

}  // namespace dmrt::rdwc
