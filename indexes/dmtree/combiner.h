// Read delegation and write combining (DMTree §4.1): same-key operations on one compute node share
// one remote op.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/hash.h"
#include "runtime/kv.h"

namespace dmrt::dmtree {

// Per compute node, shared by all its threads and fibers. A hashed slot tracks the operation in
// flight for one key (a search or an update). Requests of the same kind on the same key that
// arrive while it runs queue for the NEXT round (at most `limit` of them; more run directly):
// when the running operation finishes, one queued request leads the next round and the others
// take its result. Because a round starts only after all its members were invoked, the shared
// result is one every member may legally return (linearizable): a delegated search returns a
// value read after it was invoked; combined updates take effect at the leader's single write,
// in queue order, so the last queued value stands and every member returns the same status.
// The slot mutex is held for a few instructions, never across a verb.
class Combiner {
 public:
  Combiner(size_t slots, uint32_t limit) : slots_(slots ? slots : 1), limit_(limit) {}

  // `direct(value, out)` performs the operation remotely. Returns its (possibly shared) result.
  template <class C, class F>
  bool run(C& c, Key k, bool write, std::string_view value, std::string* out, F&& direct) {
    Slot& s = slots_[mix64(k ^ (write ? 0x51ed27 : 0)) % slots_.size()];
    std::shared_ptr<Round> r;
    bool lead = false;
    {
      std::lock_guard l(s.m);
      if (!s.active) {
        s.active = true;
        s.key = k;
        s.write = write;
        lead = true;
      } else if (s.key == k && s.write == write && s.queued < limit_) {
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
    if (out) *out = r->result;
    return r->ok;
  }

  uint64_t shared() const { return shared_.load(std::memory_order_relaxed); }

 private:
  struct Round {
    std::atomic<int> state{0};  // 0 queued, 1 ready to lead, 2 led, 3 done
    std::string value;          // update: value to write (last queued wins)
    std::string result;         // search: value read
    bool ok = false;
    std::exception_ptr error;  // the leader's failure, shared by every member
  };
  struct alignas(64) Slot {
    std::mutex m;
    bool active = false, write = false;
    Key key = 0;
    uint32_t queued = 0;
    std::shared_ptr<Round> next;
  };

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
  std::atomic<uint64_t> shared_{0}, direct_runs_{0};
};

}  // namespace dmrt::dmtree
