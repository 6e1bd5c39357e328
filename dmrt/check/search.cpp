// The per-key search: Wing-Gong/Lowe depth-first search over linearization orders of one key's
// point operations, memoizing visited configurations (see dmrt/check/linearizability.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>
#include <vector>

#include "dmrt/check/search.h"

namespace dmrt::check_detail {

namespace {

// Wing-Gong/Lowe search on one key's point operations.
//
// Completed operations are numbered 0..nc-1 by invocation time; pending mutations nc..n-1
// (pending searches constrain nothing and are dropped). Calls and returns form a doubly linked
// event list sorted by time (a call before a return at equal times: touching intervals count as
// concurrent). The search linearizes the first call it can, lifting the call and its return out
// of the list, and backtracks when it reaches a return whose operation is not linearized yet.
// Success: every completed operation linearized (pending ones may be left out).
//
// Memoized configuration = (model state, p, linearized bits in [p, hi], pending bits), where p
// is the first completed operation not linearized and hi the highest linearized one: every
// completed op below p is linearized, so the window stays as small as the overlap.
//
// Read-only operations (searches and failed calls: enabled only in states they leave unchanged)
// are linearized greedily: if any linearization exists from C and such an op r is enabled in C,
// one exists that takes r next. So when C+r fails, C fails, and the search backtracks past it.
//
// Unobserved values: a value no search or rmw ever returned can only matter through the key's
// presence, so every such value is one model value, hidden_. That merges configurations that differ
// only in which unread value is current, and it makes more operations greedy: the state
// present(hidden) is dominated by every other present state (an operation enabled in it needs only
// presence, is enabled in any present state, and leads to the same or a dominating state). So an
// update of an unread value, enabled in present(hidden), which it leaves unchanged, may be moved
// to the front of any linearization from C: the operations it skipped over then run from a state
// that dominates the one they ran from. Under hot-key contention most of the concurrent blind
// updates are of this kind, and without the rule their interleavings are searched one by one.
class KeySearch {
 public:
  // Stops early (stopped() is then true) when `poll` says so: building the event list of a key
  // with a million operations takes a while on its own.
  KeySearch(std::span<const Operation> all, MemoryBudget* memory, Poll& poll) : memo_(memory) {
    poll.tick(all.size());
    for (const Operation& o : all) {
      if (o.kind == OpKind::kScan) continue;
      if (o.pending() && o.kind == OpKind::kSearch) continue;
      (o.pending() ? pend_ : ops_).push_back(o);
      if (!o.pending() && o.ok && (o.kind == OpKind::kSearch || o.kind == OpKind::kRmw))
        observed_.push_back(o.out);
    }
    if (!sort_polled(std::span<uint64_t>(observed_), std::less<uint64_t>(), poll)) return;
    observed_.erase(std::unique(observed_.begin(), observed_.end()), observed_.end());
    hidden_ = 0x1d1e5eed0000ull;  // any value no operation returned
    while (is_observed(hidden_)) ++hidden_;
    if (!sort_polled(
            std::span<Operation>(ops_),
            [](const Operation& a, const Operation& b) {
              return a.invoke_ns != b.invoke_ns ? a.invoke_ns < b.invoke_ns
                                                : a.response_ns < b.response_ns;
            },
            poll))
      return;
    nc_ = ops_.size();
    ops_.insert(ops_.end(), pend_.begin(), pend_.end());
    n_ = ops_.size();
    // What each operation needs of the state and what it may write, as value ids (observed
    // values by rank, hidden_ last), for the dead-end test of dooms().
    req_.resize(n_);
    wr_.resize(n_);
    for (uint32_t i = 0; i < n_; ++i) {
      if (poll.tick(8)) return;
      const Operation& o = ops_[i];
      int32_t req = kNone, wr = kNone;
      bool pend = i >= nc_;
      switch (o.kind) {
        case OpKind::kSearch:
          req = o.ok ? vid(o.out) : kAbsent;
          break;
        case OpKind::kInsert:
          req = o.ok ? kAbsent : kPresent;
          wr = o.ok || pend ? vid(value_of(o)) : kNone;
          break;
        case OpKind::kUpdate:
          req = o.ok ? kPresent : kAbsent;
          wr = o.ok || pend ? vid(value_of(o)) : kNone;
          break;
        case OpKind::kRmw:
          req = o.ok ? vid(o.out) : kAbsent;
          wr = o.ok || pend ? vid(value_of(o)) : kNone;
          break;
        case OpKind::kRemove:
          req = o.ok ? kPresent : kAbsent;
          wr = o.ok || pend ? kAbsent : kNone;
          break;
        case OpKind::kScan:
          break;
      }
      req_[i] = pend ? kNone : req;  // a pending operation may be left out: it needs nothing
      wr_[i] = wr;
    }
    struct Ev {
      uint64_t t;
      uint32_t op;
      bool ret;
    };
    std::vector<Ev> evs;
    evs.reserve(2 * n_);
    for (uint32_t i = 0; i < n_; ++i) {
      evs.push_back({ops_[i].invoke_ns, i, false});
      if (i < nc_) evs.push_back({ops_[i].response_ns, i, true});
    }
    if (!sort_polled(
            std::span<Ev>(evs),
            [](const Ev& a, const Ev& b) { return a.t != b.t ? a.t < b.t : (!a.ret && b.ret); },
            poll,
            /*stable=*/true))
      return;
    e_ = evs.size();
    ev_op_.resize(e_ + 2);
    ev_ret_.resize(e_ + 2);
    call_pos_.assign(n_, 0);
    ret_pos_.assign(n_, 0);
    for (size_t k = 0; k < e_; ++k) {
      ev_op_[k + 1] = evs[k].op;
      ev_ret_[k + 1] = evs[k].ret;
      (evs[k].ret ? ret_pos_ : call_pos_)[evs[k].op] = static_cast<uint32_t>(k + 1);
    }
    words_ = (nc_ + 64) / 64 + 1;
    pwords_ = (n_ - nc_ + 63) / 64;
    built_ = true;
  }

  size_t completed() const { return nc_; }
  bool built() const { return built_; }

  // The model state `s` stands for in this key's search (unread values merged into hidden_).
  KeyState canonical(KeyState s) const {
    if (s.present && !is_observed(s.value)) s.value = hidden_;
    return s;
  }

  Verdict run(KeyState init, uint64_t max_steps, uint64_t* steps_out, Poll& poll, StopReason* why) {
    StopReason stop = StopReason::kNone;
    uint64_t steps = 0;
    size_t remaining = nc_;
    Verdict verdict = Verdict::kViolation;
    // Every piece of work below adds to the poll's counter, in proportion to its cost: the setup
    // (O(operations)), each candidate push_level() looks at (O(overlap) a step), each word of a
    // memoized configuration (O(overlap / 64) a step), each slot a growing memo moves.
    if (!built_ || poll.tick(e_ + 2 * n_)) goto stopped;
    // Reset the list: 0 = head, e_+1 = end.
    nxt_.resize(e_ + 2);
    prv_.resize(e_ + 2);
    for (size_t k = 0; k <= e_; ++k) nxt_[k] = static_cast<uint32_t>(k + 1);
    for (size_t k = 1; k <= e_ + 1; ++k) prv_[k] = static_cast<uint32_t>(k - 1);
    lin_.assign(words_, 0);
    plin_.assign(pwords_, 0);
    memo_.clear();
    need_val_.assign(observed_.size() + 1, 0);
    can_write_.assign(observed_.size() + 1, 0);
    need_absent_ = need_present_ = can_absent_ = can_present_ = 0;
    for (uint32_t i = 0; i < n_; ++i) count(i, +1);
    stack_.clear();
    levels_.clear();
    cands_.clear();

    state_ = canonical(init);
    p_ = 0;
    hi_ = -1;
    if (remaining == 0) {
      verdict = Verdict::kLinearizable;
      goto done;
    }
    if (!push_level(poll)) goto stopped;
    for (;;) {
      if (++steps > max_steps) {
        verdict = Verdict::kUnknown;
        stop = StopReason::kSteps;
        goto done;
      }
      // (No tick of its own: a step inserts into the memo, which ticks by the key's length, or
      // undoes a step that did.)
      Level& lv = levels_.back();
      if (lv.next < lv.end) {
        uint32_t op = cands_[lv.next++];
        KeyState ns;
        bool ro = false;
        step(op, state_, ns, ro);  // enabled: push_level() kept only enabled candidates
        size_t old_p = p_;
        int64_t old_hi = hi_;
        set_bit(op);
        if (op < nc_) {
          if (static_cast<int64_t>(op) > hi_) hi_ = op;
          if (op == p_)
            while (p_ < nc_ && test_bit(p_)) ++p_;
        }
        build_key(ns, p_, hi_);
        Memo::Insert fresh = memo_.insert(key_, poll);
        if (fresh == Memo::Insert::kFull) {
          verdict = Verdict::kUnknown;
          stop = StopReason::kMemory;
          goto done;
        }
        if (fresh == Memo::Insert::kStopped) goto stopped;
        if (fresh == Memo::Insert::kNew) {
          stack_.push_back({op, state_, old_hi, ro});
          lift(op);
          count(op, -1);
          state_ = ns;
          if (op < nc_ && --remaining == 0) {
            verdict = Verdict::kLinearizable;
            goto done;
          }
          if (!push_level(poll)) goto stopped;
          continue;
        }
        clear_bit(op);
        p_ = old_p;
        hi_ = old_hi;
        if (!ro) continue;
        // C + r already failed and r is greedy, so C fails: fall through to backtrack.
      }
      // This configuration failed: undo the step that led to it, and go on with the parent's
      // next candidate, unless that step was greedy (then the parent fails too).
      for (;;) {
        cands_.resize(levels_.back().begin);
        levels_.pop_back();
        if (stack_.empty()) {
          verdict = Verdict::kViolation;
          goto done;
        }
        Frame f = stack_.back();
        stack_.pop_back();
        unlift(f.op);
        count(f.op, +1);
        clear_bit(f.op);
        state_ = f.state;
        hi_ = f.prev_hi;
        if (f.op < nc_) {
          ++remaining;
          if (f.op < p_) p_ = f.op;
        }
        if (!f.readonly) break;
      }
    }
  done:
    if (steps_out) *steps_out += steps;
    if (why) *why = stop;
    return verdict;
  stopped:  // out of time, or cancelled
    verdict = Verdict::kUnknown;
    stop = poll.reason();
    goto done;
  }

 private:
  struct Frame {
    uint32_t op;
    KeyState state;
    int64_t prev_hi;
    bool readonly;
  };
  struct Level {  // the candidates of one configuration: cands_[begin, end), next to try at next
    size_t begin, end, next;
  };

  // Candidates of the current configuration: the operations whose call comes before the first
  // pending return in the event list (the ones real time allows next) and that the model state
  // enables. A greedy (read-only) one is the only candidate when there is one; otherwise they are
  // tried by earliest response first: the operation that must take effect soonest is the likeliest
  // next, and a long operation is then placed as late as it can be, which suits a write nobody
  // read. The order changes only how soon a linearization is found, never the verdict.
  // False (and no level pushed) when `poll` says stop: with a hundred thousand operations open at
  // once, one call looks at as many candidates.
  bool push_level(Poll& poll) {
    const uint32_t end = static_cast<uint32_t>(e_ + 1);
    // The operation of the first return still in the list must be linearized before anything
    // invoked after it returned: the candidates after which it is enabled go first.
    uint32_t first_ret = nxt_[0];
    for (uint32_t walked = 0; first_ret != end && !ev_ret_[first_ret]; ++walked) {
      if ((walked & 255) == 255 && poll.tick(256)) return false;
      first_ret = nxt_[first_ret];
    }
    const bool has_urgent = first_ret != end;
    const uint32_t urgent = has_urgent ? ev_op_[first_ret] : 0;
    rank_.clear();
    uint32_t looked = 0;
    for (uint32_t e = nxt_[0]; e != first_ret; e = nxt_[e]) {
      if ((++looked & 63) == 0 && poll.tick(64 * 4)) return false;
      uint32_t op = ev_op_[e];
      KeyState ns;
      bool ro = false;
      if (!step(op, state_, ns, ro)) continue;
      if (ro) {
        size_t begin = cands_.size();
        cands_.push_back(op);
        levels_.push_back({begin, begin + 1, begin});
        return true;
      }
      if (dooms(op, state_, ns)) continue;
      KeyState unused;
      bool unused_ro = false;
      int rank = has_urgent && step(urgent, ns, unused, unused_ro) ? 0 : 1;
      rank_.push_back({rank, op});
    }
    // A total order (ties broken by the operation's number): any sort gives the same list.
    if (!sort_polled(
            std::span<std::pair<int, uint32_t>>(rank_),
            [&](const std::pair<int, uint32_t>& a, const std::pair<int, uint32_t>& b) {
              if (a.first != b.first) return a.first < b.first;
              uint64_t da = deadline_of(a.second), db = deadline_of(b.second);
              return da != db ? da < db : a.second < b.second;
            },
            poll))
      return false;
    size_t begin = cands_.size();
    for (const auto& r : rank_) cands_.push_back(r.second);
    levels_.push_back({begin, cands_.size(), begin});
    return true;
  }
  // Dead ends. Taking `op` from s to ns is hopeless when s can never come back and some operation
  // not yet linearized needs it: a read of s's value when nothing left can write that value again,
  // an operation needing presence when nothing left can insert, or absence when nothing left can
  // remove. Skipping such steps changes no verdict; it stops the search from placing a write
  // whose value is read much later far too early and then refuting every interleaving of the
  // operations in between, which is what made hot keys with long writes undecidable.
  bool dooms(uint32_t op, const KeyState& s, const KeyState& ns) {
    count(op, -1);
    bool doomed = false;
    if (s.present && (!ns.present || ns.value != s.value)) {
      int32_t v = vid(s.value);
      if (need_val_[v] > 0 && can_write_[v] == 0) doomed = true;
    }
    if (s.present && !ns.present && need_present_ > 0 && can_present_ == 0) doomed = true;
    if (!s.present && ns.present && need_absent_ > 0 && can_absent_ == 0) doomed = true;
    count(op, +1);
    return doomed;
  }
  // Adds (+1) or removes (-1) an operation not yet linearized from the dead-end counters.
  void count(uint32_t op, int d) {
    int32_t r = req_[op], w = wr_[op];
    if (r >= 0) {
      need_val_[r] += d;
      need_present_ += d;
    } else if (r == kPresent) {
      need_present_ += d;
    } else if (r == kAbsent) {
      need_absent_ += d;
    }
    if (w >= 0) {
      can_write_[w] += d;
      if (ops_[op].kind == OpKind::kInsert) can_present_ += d;
    } else if (w == kAbsent) {
      can_absent_ += d;
    }
  }
  // Dense id of a model value: observed values by rank, hidden_ (any unread value) last.
  int32_t vid(uint64_t v) const {
    auto it = std::lower_bound(observed_.begin(), observed_.end(), v);
    if (it != observed_.end() && *it == v) return static_cast<int32_t>(it - observed_.begin());
    return static_cast<int32_t>(observed_.size());
  }

  uint64_t deadline_of(uint32_t op) const { return op < nc_ ? ops_[op].response_ns : kNoResponse; }

  bool is_observed(uint64_t v) const {
    return std::binary_search(observed_.begin(), observed_.end(), v);
  }
  uint64_t value_of(const Operation& o) const { return is_observed(o.arg) ? o.arg : hidden_; }

  bool step(uint32_t i, const KeyState& s, KeyState& ns, bool& ro) const {
    const Operation& o = ops_[i];
    ns = s;
    if (i >= nc_) {  // pending mutation: only its state-changing outcome is worth linearizing
      switch (o.kind) {
        case OpKind::kInsert:
          if (s.present) return false;
          ns = {true, value_of(o)};
          return true;
        case OpKind::kUpdate:
        case OpKind::kRmw:
          if (!s.present) return false;
          ns = {true, value_of(o)};
          ro = ns.value == hidden_ && s.value == hidden_;  // a no-op from the least present state
          return true;
        case OpKind::kRemove:
          if (!s.present) return false;
          ns = {false, 0};
          return true;
        default:
          return false;
      }
    }
    ro = o.kind == OpKind::kSearch || !o.ok;
    switch (o.kind) {
      case OpKind::kSearch:
        return o.ok ? (s.present && s.value == o.out) : !s.present;
      case OpKind::kInsert:
        if (!o.ok) return s.present;
        if (s.present) return false;
        ns = {true, value_of(o)};
        return true;
      case OpKind::kUpdate:
        if (!o.ok) return !s.present;
        if (!s.present) return false;
        ns = {true, value_of(o)};
        ro = ns.value == hidden_ && s.value == hidden_;  // see the class comment
        return true;
      case OpKind::kRemove:
        if (!o.ok) return !s.present;
        if (!s.present) return false;
        ns = {false, 0};
        return true;
      case OpKind::kRmw:
        if (!o.ok) return !s.present;
        if (!s.present || s.value != o.out) return false;
        ns = {true, value_of(o)};
        return true;
      case OpKind::kScan:
        return false;
    }
    return false;
  }

  void set_bit(uint32_t i) {
    if (i < nc_)
      lin_[i >> 6] |= uint64_t{1} << (i & 63);
    else
      plin_[(i - nc_) >> 6] |= uint64_t{1} << ((i - nc_) & 63);
  }
  void clear_bit(uint32_t i) {
    if (i < nc_)
      lin_[i >> 6] &= ~(uint64_t{1} << (i & 63));
    else
      plin_[(i - nc_) >> 6] &= ~(uint64_t{1} << ((i - nc_) & 63));
  }
  bool test_bit(size_t i) const { return (lin_[i >> 6] >> (i & 63)) & 1; }

  void build_key(const KeyState& s, size_t p, int64_t hi) {
    key_.clear();
    key_.push_back(s.present);
    key_.push_back(s.value);
    key_.push_back(p);
    if (hi >= static_cast<int64_t>(p)) {
      size_t nbits = static_cast<size_t>(hi) - p + 1;
      size_t nw = (nbits + 63) / 64;
      for (size_t w = 0; w < nw; ++w) {
        size_t pos = p + 64 * w;
        size_t wi = pos >> 6, sh = pos & 63;
        uint64_t v = lin_[wi] >> sh;
        if (sh) v |= lin_[wi + 1] << (64 - sh);
        if (w == nw - 1 && nbits % 64) v &= (uint64_t{1} << (nbits % 64)) - 1;
        key_.push_back(v);
      }
    }
    key_.insert(key_.end(), plin_.begin(), plin_.end());
  }

  void remove_node(uint32_t k) {
    nxt_[prv_[k]] = nxt_[k];
    prv_[nxt_[k]] = prv_[k];
  }
  void restore_node(uint32_t k) {
    nxt_[prv_[k]] = k;
    prv_[nxt_[k]] = k;
  }
  void lift(uint32_t op) {
    remove_node(call_pos_[op]);
    if (ret_pos_[op]) remove_node(ret_pos_[op]);
  }
  void unlift(uint32_t op) {
    if (ret_pos_[op]) restore_node(ret_pos_[op]);
    restore_node(call_pos_[op]);
  }

  std::vector<Operation> ops_, pend_;
  std::vector<uint64_t> observed_;  // values some completed search or rmw returned, sorted
  static constexpr int32_t kNone = -1, kAbsent = -2, kPresent = -3;
  std::vector<int32_t> req_, wr_;  // per op: state it needs (if completed), value it may write
  std::vector<int32_t> need_val_, can_write_;  // per value id, over operations not linearized
  int64_t need_absent_ = 0, need_present_ = 0, can_absent_ = 0, can_present_ = 0;
  uint64_t hidden_ = 0;  // the one model value of every unobserved value
  size_t nc_ = 0, n_ = 0, e_ = 0, words_ = 1, pwords_ = 0;
  std::vector<uint32_t> ev_op_;
  std::vector<uint8_t> ev_ret_;
  std::vector<uint32_t> call_pos_, ret_pos_, nxt_, prv_;
  std::vector<uint64_t> lin_, plin_, key_;
  std::vector<Frame> stack_;
  std::vector<Level> levels_;
  std::vector<uint32_t> cands_;
  std::vector<std::pair<int, uint32_t>> rank_;  // push_level()'s sort keys
  KeyState state_;
  size_t p_ = 0;
  int64_t hi_ = -1;
  bool built_ = false;
  Memo memo_;
};

std::vector<KeyState> candidate_states(std::span<const Operation> ops) {
  std::vector<uint64_t> vals;
  for (const Operation& o : ops) {
    if (o.kind == OpKind::kInsert || o.kind == OpKind::kUpdate || o.kind == OpKind::kRmw)
      vals.push_back(o.arg);
    if ((o.kind == OpKind::kSearch || o.kind == OpKind::kRmw) && o.ok && !o.pending())
      vals.push_back(o.out);
  }
  std::sort(vals.begin(), vals.end());
  vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
  std::vector<KeyState> out{{false, 0}};
  for (uint64_t v : vals) out.push_back({true, v});
  uint64_t fresh = 0x5eed5eed5eed5eedull;  // present with a value none of the ops mention
  while (std::binary_search(vals.begin(), vals.end(), fresh)) ++fresh;
  out.push_back({true, fresh});
  return out;
}

Verdict any_state(KeySearch& s, std::span<const Operation> ops, uint64_t max_steps, uint64_t* steps,
                  Poll& poll, StopReason* why) {
  bool unknown = false;
  std::vector<KeyState> tried;  // unread values are one model state: search it once
  for (const KeyState& cand : candidate_states(ops)) {
    KeyState st = s.canonical(cand);
    if (poll.tick(tried.size() + 1)) {
      if (why) *why = poll.reason();
      return Verdict::kUnknown;
    }
    if (std::find(tried.begin(), tried.end(), st) != tried.end()) continue;
    tried.push_back(st);
    StopReason r = StopReason::kNone;
    Verdict v = s.run(st, max_steps, steps, poll, &r);
    if (v == Verdict::kLinearizable) return v;
    if (v == Verdict::kUnknown) {
      unknown = true;
      if (why) *why = r;
      // Out of time or memory, or cancelled: the other states would stop the same way.
      if (r != StopReason::kSteps) break;
    }
  }
  return unknown ? Verdict::kUnknown : Verdict::kViolation;
}

}  // namespace

Verdict search_key(std::span<const Operation> ops, KeyState initial, uint64_t max_steps,
                   uint64_t* steps, const SearchLimits& limits, StopReason* why) {
  Poll poll(limits.deadline, limits.cancel);
  KeySearch s(ops, limits.memory, poll);
  return s.run(initial, max_steps, steps, poll, why);
}

Verdict search_key_any_state(std::span<const Operation> ops, uint64_t max_steps, uint64_t* steps,
                             const SearchLimits& limits, StopReason* why) {
  Poll poll(limits.deadline, limits.cancel);
  KeySearch s(ops, limits.memory, poll);
  return any_state(s, ops, max_steps, steps, poll, why);
}

}  // namespace dmrt::check_detail

namespace dmrt {

Verdict check_key(std::span<const Operation> ops, KeyState initial, uint64_t max_steps,
                  uint64_t* steps) {
  return check_detail::search_key(ops, initial, max_steps, steps, {});
}

Verdict check_key_any_state(std::span<const Operation> ops, uint64_t max_steps, uint64_t* steps) {
  return check_detail::search_key_any_state(ops, max_steps, steps, {});
}

}  // namespace dmrt
