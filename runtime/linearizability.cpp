// Linearizability checker: per-key depth-first search with memoization, scan checks, shrinking.
#include "runtime/linearizability.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unordered_set>

namespace dmrt {

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::kSearch:
      return "search";
    case OpKind::kInsert:
      return "insert";
    case OpKind::kUpdate:
      return "update";
    case OpKind::kRemove:
      return "remove";
    case OpKind::kScan:
      return "scan";
    case OpKind::kRmw:
      return "rmw";
  }
  return "?";
}

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::kLinearizable:
      return "linearizable";
    case Verdict::kViolation:
      return "NOT linearizable";
    case Verdict::kUnknown:
      return "unknown (budget exhausted)";
  }
  return "?";
}

std::string History::render_value(uint64_t hash) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "#%016llx", static_cast<unsigned long long>(hash));
  auto it = values.find(hash);
  if (it == values.end()) return buf;
  std::string v = it->second.size() > 40 ? it->second.substr(0, 37) + "..." : it->second;
  return "\"" + v + "\"";
}

std::string History::render(const Operation& op, uint64_t time_base) const {
  std::string s =
      "c" + std::to_string(op.client) + " [" + std::to_string(op.invoke_ns - time_base) + ", " +
      (op.pending() ? std::string("pending") : std::to_string(op.response_ns - time_base)) + "] " +
      to_string(op.kind) + "(";
  switch (op.kind) {
    case OpKind::kSearch:
    case OpKind::kRemove:
      s += std::to_string(op.key) + ")";
      break;
    case OpKind::kInsert:
    case OpKind::kUpdate:
    case OpKind::kRmw:
      s += std::to_string(op.key) + ", " + render_value(op.arg) + ")";
      break;
    case OpKind::kScan:
      s += "from " + std::to_string(op.key) + ", count " + std::to_string(op.arg) + ")";
      break;
  }
  if (op.pending()) return s + " -> (no response)";
  switch (op.kind) {
    case OpKind::kSearch:
    case OpKind::kRmw:
      s += op.ok ? " -> found " + render_value(op.out) : " -> not found";
      break;
    case OpKind::kScan: {
      s += " -> " + std::to_string(op.rows) + " rows [";
      if (op.out + op.rows <= scan_rows.size()) {
        auto rows = rows_of(op);
        for (size_t i = 0; i < rows.size() && i < 12; ++i)
          s += (i ? ", " : "") + std::to_string(rows[i].key) + "=" + render_value(rows[i].value);
        if (rows.size() > 12) s += ", ...";
      }
      s += "]";
      break;
    }
    default:
      s += op.ok ? " -> true" : " -> false";
  }
  return s;
}

namespace {

using Clock = std::chrono::steady_clock;

inline uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

// Set of variable-length word strings (memoized configurations), open addressing.
class Memo {
 public:
  void clear() {
    arena_.clear();
    std::fill(slots_.begin(), slots_.end(), kEmpty);
    size_ = 0;
  }
  // True when `key` was not there (and is now).
  bool insert(const std::vector<uint64_t>& key) {
    if (slots_.empty() || (size_ + 1) * 2 > slots_.size()) grow();
    uint64_t h = hash(key);
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      uint64_t s = slots_[i];
      if (s == kEmpty) {
        slots_[i] = arena_.size();
        hashes_[i] = h;
        arena_.push_back(key.size());
        arena_.insert(arena_.end(), key.begin(), key.end());
        ++size_;
        return true;
      }
      if (hashes_[i] == h && equal(s, key)) return false;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  static uint64_t hash(const std::vector<uint64_t>& key) {
    uint64_t h = key.size();
    for (uint64_t w : key) h = mix(h, w);
    return h;
  }
  bool equal(uint64_t at, const std::vector<uint64_t>& key) const {
    if (arena_[at] != key.size()) return false;
    return std::equal(key.begin(), key.end(), arena_.begin() + at + 1);
  }
  void grow() {
    size_t cap = slots_.empty() ? 1024 : slots_.size() * 2;
    std::vector<uint64_t> old_slots(cap, kEmpty), old_hashes(cap);
    old_slots.swap(slots_);
    old_hashes.swap(hashes_);
    size_t mask = cap - 1;
    for (size_t j = 0; j < old_slots.size(); ++j) {
      if (old_slots[j] == kEmpty) continue;
      size_t i = old_hashes[j] & mask;
      while (slots_[i] != kEmpty) i = (i + 1) & mask;
      slots_[i] = old_slots[j];
      hashes_[i] = old_hashes[j];
    }
  }
  std::vector<uint64_t> arena_;
  std::vector<uint64_t> slots_, hashes_;
  size_t size_ = 0;
};

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
  explicit KeySearch(std::span<const Operation> all) {
    for (const Operation& o : all) {
      if (o.kind == OpKind::kScan) continue;
      if (o.pending() && o.kind == OpKind::kSearch) continue;
      (o.pending() ? pend_ : ops_).push_back(o);
      if (!o.pending() && o.ok && (o.kind == OpKind::kSearch || o.kind == OpKind::kRmw))
        observed_.push_back(o.out);
    }
    std::sort(observed_.begin(), observed_.end());
    observed_.erase(std::unique(observed_.begin(), observed_.end()), observed_.end());
    hidden_ = 0x1d1e5eed0000ull;  // any value no operation returned
    while (is_observed(hidden_)) ++hidden_;
    std::sort(ops_.begin(), ops_.end(), [](const Operation& a, const Operation& b) {
      return a.invoke_ns != b.invoke_ns ? a.invoke_ns < b.invoke_ns : a.response_ns < b.response_ns;
    });
    nc_ = ops_.size();
    ops_.insert(ops_.end(), pend_.begin(), pend_.end());
    n_ = ops_.size();
    // What each operation needs of the state and what it may write, as value ids (observed
    // values by rank, hidden_ last), for the dead-end test of dooms().
    req_.resize(n_);
    wr_.resize(n_);
    for (uint32_t i = 0; i < n_; ++i) {
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
    std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) {
      return a.t != b.t ? a.t < b.t : (!a.ret && b.ret);
    });
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
  }

  size_t completed() const { return nc_; }

  // The model state `s` stands for in this key's search (unread values merged into hidden_).
  KeyState canonical(KeyState s) const {
    if (s.present && !is_observed(s.value)) s.value = hidden_;
    return s;
  }

  Verdict run(KeyState init, uint64_t max_steps, uint64_t* steps_out,
              Clock::time_point deadline = Clock::time_point::max(),
              const std::atomic<bool>* cancel = nullptr) {
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
    size_t remaining = nc_;
    p_ = 0;
    hi_ = -1;
    uint64_t steps = 0;
    Verdict verdict = Verdict::kViolation;
    if (remaining == 0) {
      verdict = Verdict::kLinearizable;
      goto done;
    }
    push_level();
    for (;;) {
      if (++steps > max_steps) {
        verdict = Verdict::kUnknown;
        goto done;
      }
      if ((steps & 0xffff) == 0 &&
          (Clock::now() > deadline || (cancel && cancel->load(std::memory_order_relaxed)))) {
        verdict = Verdict::kUnknown;
        goto done;
      }
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
        if (memo_.insert(key_)) {
          stack_.push_back({op, state_, old_hi, ro});
          lift(op);
          count(op, -1);
          state_ = ns;
          if (op < nc_ && --remaining == 0) {
            verdict = Verdict::kLinearizable;
            goto done;
          }
          push_level();
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
    return verdict;
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
  void push_level() {
    const uint32_t end = static_cast<uint32_t>(e_ + 1);
    // The operation of the first return still in the list must be linearized before anything
    // invoked after it returned: the candidates after which it is enabled go first.
    uint32_t first_ret = nxt_[0];
    while (first_ret != end && !ev_ret_[first_ret]) first_ret = nxt_[first_ret];
    const bool has_urgent = first_ret != end;
    const uint32_t urgent = has_urgent ? ev_op_[first_ret] : 0;
    rank_.clear();
    for (uint32_t e = nxt_[0]; e != first_ret; e = nxt_[e]) {
      uint32_t op = ev_op_[e];
      KeyState ns;
      bool ro = false;
      if (!step(op, state_, ns, ro)) continue;
      if (ro) {
        size_t begin = cands_.size();
        cands_.push_back(op);
        levels_.push_back({begin, begin + 1, begin});
        return;
      }
      if (dooms(op, state_, ns)) continue;
      KeyState unused;
      bool unused_ro = false;
      int rank = has_urgent && step(urgent, ns, unused, unused_ro) ? 0 : 1;
      rank_.push_back({rank, op});
    }
    std::sort(rank_.begin(), rank_.end(),
              [&](const std::pair<int, uint32_t>& a, const std::pair<int, uint32_t>& b) {
                if (a.first != b.first) return a.first < b.first;
                uint64_t da = deadline_of(a.second), db = deadline_of(b.second);
                return da != db ? da < db : a.second < b.second;
              });
    size_t begin = cands_.size();
    for (const auto& r : rank_) cands_.push_back(r.second);
    levels_.push_back({begin, cands_.size(), begin});
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

Verdict any_state(KeySearch& s, std::span<const Operation> ops, uint64_t max_steps,
                  uint64_t* steps) {
  bool unknown = false;
  std::vector<KeyState> tried;  // unread values are one model state: search it once
  for (const KeyState& cand : candidate_states(ops)) {
    KeyState st = s.canonical(cand);
    if (std::find(tried.begin(), tried.end(), st) != tried.end()) continue;
    tried.push_back(st);
    Verdict v = s.run(st, max_steps, steps);
    if (v == Verdict::kLinearizable) return v;
    if (v == Verdict::kUnknown) unknown = true;
  }
  return unknown ? Verdict::kUnknown : Verdict::kViolation;
}

// --- scans ---------------------------------------------------------------------------------------

bool implies_present(const Operation& o) {
  switch (o.kind) {
    case OpKind::kInsert:
      return true;  // inserted, or found present
    case OpKind::kUpdate:
    case OpKind::kSearch:
    case OpKind::kRmw:
      return o.ok;
    default:
      return false;
  }
}
bool writes_value(const Operation& o) {  // may have installed o.arg
  bool w = o.kind == OpKind::kInsert || o.kind == OpKind::kUpdate || o.kind == OpKind::kRmw;
  return w && (o.ok || o.pending());
}
bool mutated(const Operation& o) {  // certainly changed the key (completed and succeeded)
  return !o.pending() && o.ok &&
         (o.kind == OpKind::kInsert || o.kind == OpKind::kUpdate || o.kind == OpKind::kRmw ||
          o.kind == OpKind::kRemove);
}

// Per-key tables answering the scan questions in O(log n).
struct ScanIndex {
  // presence proofs sorted by response, with running max of invocation
  std::vector<uint64_t> proof_resp, proof_inv_max;
  // removes that may have succeeded, sorted by invocation, with running max of response
  std::vector<uint64_t> rm_inv, rm_resp_max;
  // writes of a value: (value hash, invoke, response)
  struct W {
    uint64_t value, inv, resp;
  };
  std::vector<W> writes;
  // certain mutations sorted by invocation, with suffix min of response
  std::vector<uint64_t> mut_inv, mut_resp_min;

  explicit ScanIndex(std::span<const Operation> ops) {
    std::vector<std::pair<uint64_t, uint64_t>> pr, rm, mu;
    for (const Operation& o : ops) {
      if (o.kind == OpKind::kScan) continue;
      if (!o.pending() && implies_present(o)) pr.push_back({o.response_ns, o.invoke_ns});
      if (o.kind == OpKind::kRemove && (o.ok || o.pending()))
        rm.push_back({o.invoke_ns, o.response_ns});
      if (writes_value(o)) writes.push_back({o.arg, o.invoke_ns, o.response_ns});
      if (mutated(o)) mu.push_back({o.invoke_ns, o.response_ns});
    }
    std::sort(pr.begin(), pr.end());
    uint64_t m = 0;
    for (auto [r, i] : pr) {
      proof_resp.push_back(r);
      proof_inv_max.push_back(m = std::max(m, i));
    }
    std::sort(rm.begin(), rm.end());
    m = 0;
    for (auto [i, r] : rm) {
      rm_inv.push_back(i);
      rm_resp_max.push_back(m = std::max(m, r));
    }
    std::sort(writes.begin(), writes.end(),
              [](const W& a, const W& b) { return a.value < b.value; });
    std::sort(mu.begin(), mu.end());
    mut_inv.resize(mu.size());
    mut_resp_min.resize(mu.size());
    uint64_t mn = kNoResponse;
    for (size_t k = mu.size(); k-- > 0;) {
      mut_inv[k] = mu[k].first;
      mut_resp_min[k] = mn = std::min(mn, mu[k].second);
    }
  }

  // Certainly present during all of [a, b]?
  bool present_throughout(uint64_t a, uint64_t b) const {
    size_t n = std::lower_bound(proof_resp.begin(), proof_resp.end(), a) - proof_resp.begin();
    if (n == 0) return false;  // no op proving presence completed before a
    uint64_t from = proof_inv_max[n - 1];
    size_t r = std::lower_bound(rm_inv.begin(), rm_inv.end(), b) - rm_inv.begin();
    return r == 0 || rm_resp_max[r - 1] <= from;  // no remove could fall in (from, b)
  }
  // Could the key have held `value` at some moment of [a, b]?
  bool could_hold(uint64_t value, uint64_t a, uint64_t b) const {
    auto lo = std::lower_bound(writes.begin(), writes.end(), value,
                               [](const W& w, uint64_t v) { return w.value < v; });
    for (auto it = lo; it != writes.end() && it->value == value; ++it) {
      if (it->inv >= b) continue;  // began after the scan ended
      if (it->resp == kNoResponse) return true;
      size_t k = std::upper_bound(mut_inv.begin(), mut_inv.end(), it->resp) - mut_inv.begin();
      if (k == mut_inv.size() || mut_resp_min[k] >= a) return true;  // not surely overwritten
    }
    return false;
  }
};

struct KeyRange {
  Key key;
  size_t begin, end;  // into the sorted point-op array
};

}  // namespace

Verdict check_key(std::span<const Operation> ops, KeyState initial, uint64_t max_steps,
                  uint64_t* steps) {
  KeySearch s(ops);
  return s.run(initial, max_steps, steps);
}

Verdict check_key_any_state(std::span<const Operation> ops, uint64_t max_steps, uint64_t* steps) {
  KeySearch s(ops);
  return any_state(s, ops, max_steps, steps);
}

namespace {

// A small failing sub-history of one key's (non-linearizable) operations.
std::vector<Operation> shrink_key(std::vector<Operation> ops, const CheckOptions& opt,
                                  bool& from_any_state) {
  std::sort(ops.begin(), ops.end(), [](const Operation& a, const Operation& b) {
    return a.invoke_ns != b.invoke_ns ? a.invoke_ns < b.invoke_ns : a.response_ns < b.response_ns;
  });
  // Quiescent segments: seg[k] = index where segment k starts; no op is open across a boundary.
  std::vector<size_t> seg{0};
  uint64_t open_until = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i > 0 && open_until < ops[i].invoke_ns) seg.push_back(i);
    open_until = std::max(open_until, ops[i].response_ns);
  }
  seg.push_back(ops.size());
  size_t nseg = seg.size() - 1;
  auto window = [&](size_t i, size_t j) {  // segments [i, j)
    return std::vector<Operation>(ops.begin() + seg[i], ops.begin() + seg[j]);
  };
  uint64_t budget = opt.shrink_steps;
  auto fails_empty = [&](const std::vector<Operation>& w) {
    return check_key(w, {}, budget) == Verdict::kViolation;
  };
  auto fails_any = [&](const std::vector<Operation>& w) {
    return check_key_any_state(w, budget) == Verdict::kViolation;
  };
  // Shortest failing prefix of segments (monotone: a longer prefix of a failing one fails).
  size_t lo = 1, hi = nseg;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (fails_empty(window(0, mid)))
      hi = mid;
    else
      lo = mid + 1;
  }
  size_t j = hi;
  std::vector<Operation> best = window(0, j);
  // Latest start segment from which the window fails from ANY state (monotone in the start):
  // galloping back from the end keeps the probed windows about twice the answer's size.
  from_any_state = false;
  constexpr size_t kMaxAnyStateWindow = 4000;
  size_t good = j, step = 1;  // window(good, j) fails from any state; j = none found yet
  size_t bad = j;             // window(bad, j) does not (or not tried)
  for (;;) {
    size_t i = step > j ? 0 : j - step;
    if (seg[j] - seg[i] > kMaxAnyStateWindow) break;
    if (fails_any(window(i, j))) {
      good = i;
      break;
    }
    bad = i;
    if (i == 0) break;
    step *= 2;
  }
  if (good < j) {
    size_t a = good, b = bad;  // fails at a, not at b (a < b)
    while (b - a > 1) {
      size_t mid = (a + b) / 2;
      if (fails_any(window(mid, j)))
        a = mid;
      else
        b = mid;
    }
    best = window(a, j);
    from_any_state = true;
  }
  // Drop operations while the rest still fails the same way: chunks of half the history first,
  // then ever smaller ones down to single operations (delta debugging), so a long window left by
  // one very long operation shrinks in about log(n) passes instead of n single drops.
  // Keep the writes of values the remaining operations read: a witness names its sources.
  auto keeps_sources = [](const std::vector<Operation>& t, const std::vector<Operation>& from) {
    for (const Operation& r : t) {
      if (!r.ok || r.pending() || (r.kind != OpKind::kSearch && r.kind != OpKind::kRmw)) continue;
      auto writes = [&](const Operation& w) {
        return (w.kind == OpKind::kInsert || w.kind == OpKind::kUpdate || w.kind == OpKind::kRmw) &&
               w.arg == r.out;
      };
      bool had = std::any_of(from.begin(), from.end(), writes);
      if (had && std::none_of(t.begin(), t.end(), writes)) return false;
    }
    return true;
  };
  auto deadline = Clock::now() + std::chrono::seconds(10);
  for (size_t chunk = std::max<size_t>(best.size() / 2, 1); chunk >= 1; chunk /= 2) {
    for (size_t i = 0; i < best.size() && Clock::now() < deadline;) {
      std::vector<Operation> t = best;
      t.erase(t.begin() + i, t.begin() + std::min(i + chunk, t.size()));
      if (!t.empty() && keeps_sources(t, best) && (from_any_state ? fails_any(t) : fails_empty(t)))
        best = std::move(t);
      else
        i += chunk;
    }
    if (chunk == 1) break;
  }
  return best;
}

std::string render_ops(const History& h, const std::vector<Operation>& ops, size_t limit) {
  uint64_t base = ~0ull;
  for (const Operation& o : ops) base = std::min(base, o.invoke_ns);
  std::string s;
  for (size_t i = 0; i < ops.size() && i < limit; ++i) s += "  " + h.render(ops[i], base) + "\n";
  if (ops.size() > limit) s += "  ... " + std::to_string(ops.size() - limit) + " more\n";
  return s;
}

}  // namespace

std::string CheckResult::explain() const {
  std::string s = std::string("history ") + to_string(verdict) + ": " +
                  std::to_string(operations_checked) + " operations, " +
                  std::to_string(keys_checked) + " keys, " + std::to_string(scans_checked) +
                  " scans, " + std::to_string(search_steps) + " search steps, " +
                  std::to_string(seconds) + " s\n";
  if (failing_key)
    s += "key " + std::to_string(*failing_key) + ": these " +
         std::to_string(smallest_failing_history.size()) + " operations are not linearizable " +
         (witness_from_any_state ? "from any initial state" : "starting from an empty index") +
         " (times in ns relative to the first):\n";
  if (failing_scan) s += "scan violation: " + scan_problem + "\n";
  s += details;
  if (!unknown_keys.empty()) {
    s += "undecided keys (" + std::to_string(unknown_keys.size()) + "):";
    for (size_t i = 0; i < unknown_keys.size() && i < 20; ++i)
      s += " " + std::to_string(unknown_keys[i]);
    s += "\n";
  }
  return s;
}

CheckResult check_history(const History& history, const CheckOptions& opt) {
  auto t0 = Clock::now();
  auto deadline = opt.deadline_seconds > 0
                      ? t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(opt.deadline_seconds))
                      : Clock::time_point::max();
  CheckResult res;

  // Point operations grouped by key.
  std::vector<Operation> ops;
  ops.reserve(history.ops.size());
  std::vector<Operation> scans;
  for (const Operation& o : history.ops) (o.kind == OpKind::kScan ? scans : ops).push_back(o);
  std::sort(ops.begin(), ops.end(), [](const Operation& a, const Operation& b) {
    return a.key != b.key ? a.key < b.key : a.invoke_ns < b.invoke_ns;
  });
  std::vector<KeyRange> keys;
  for (size_t i = 0; i < ops.size();) {
    size_t j = i;
    while (j < ops.size() && ops[j].key == ops[i].key) ++j;
    keys.push_back({ops[i].key, i, j});
    i = j;
  }

  std::vector<Verdict> verdicts(keys.size(), Verdict::kUnknown);
  std::vector<uint8_t> done(keys.size(), 0);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> steps{0};
  auto worker = [&] {
    for (;;) {
      size_t k = next.fetch_add(1);
      if (k >= keys.size() || stop.load() || Clock::now() > deadline) return;
      std::span<const Operation> kops(ops.data() + keys[k].begin, keys[k].end - keys[k].begin);
      uint64_t st = 0;
      KeySearch s(kops);
      Verdict v = s.run({}, opt.max_steps_per_key, &st, deadline, &stop);
      steps += st;
      verdicts[k] = v;
      done[k] = 1;
      if (v == Verdict::kViolation) stop = true;
    }
  };
  unsigned nthreads = opt.threads ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  nthreads = static_cast<unsigned>(std::min<size_t>(nthreads, std::max<size_t>(1, keys.size())));
  if (nthreads <= 1) {
    worker();
  } else {
    std::vector<std::thread> ts;
    for (unsigned i = 0; i < nthreads; ++i) ts.emplace_back(worker);
    for (auto& t : ts) t.join();
  }
  res.search_steps = steps.load();

  std::optional<size_t> bad;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (done[k] && verdicts[k] == Verdict::kViolation) {
      if (!bad) bad = k;
    } else if (verdicts[k] == Verdict::kUnknown) {
      res.unknown_keys.push_back(keys[k].key);
    } else {
      ++res.keys_checked;
      res.operations_checked += keys[k].end - keys[k].begin;
    }
  }

  if (bad) {
    const KeyRange& kr = keys[*bad];
    res.failing_key = kr.key;
    ++res.keys_checked;
    res.operations_checked += kr.end - kr.begin;
    res.unknown_keys.clear();  // a violation decides the history; the rest was cancelled
    std::vector<Operation> kops(ops.begin() + kr.begin, ops.begin() + kr.end);
    if (opt.shrink) {
      res.smallest_failing_history = shrink_key(std::move(kops), opt, res.witness_from_any_state);
    } else {
      res.smallest_failing_history = std::move(kops);
    }
    res.details = render_ops(history, res.smallest_failing_history, opt.max_rendered_ops);
  }

  // Scans.
  if (opt.check_scans && !scans.empty() && !bad) {
    std::vector<Key> key_list;
    std::vector<ScanIndex> idx;
    key_list.reserve(keys.size());
    idx.reserve(keys.size());
    for (const KeyRange& kr : keys) {
      key_list.push_back(kr.key);
      idx.emplace_back(std::span<const Operation>(ops.data() + kr.begin, kr.end - kr.begin));
    }
    auto find = [&](Key k) -> const ScanIndex* {
      auto it = std::lower_bound(key_list.begin(), key_list.end(), k);
      return it != key_list.end() && *it == k ? &idx[it - key_list.begin()] : nullptr;
    };
    std::sort(scans.begin(), scans.end(),
              [](const Operation& a, const Operation& b) { return a.invoke_ns < b.invoke_ns; });
    for (const Operation& sc : scans) {
      if (sc.pending()) continue;  // returned nothing: promises nothing
      if (Clock::now() > deadline) {
        res.unknown = true;
        break;
      }
      ++res.scans_checked;
      auto rows = history.rows_of(sc);
      std::string problem;
      std::optional<Key> about;
      if (rows.size() > sc.arg) problem = "returned more rows than asked for";
      for (size_t i = 0; problem.empty() && i < rows.size(); ++i) {
        if (rows[i].key < sc.key) {
          problem = "row key " + std::to_string(rows[i].key) + " is below from";
        } else if (i > 0 && rows[i].key <= rows[i - 1].key) {
          problem = "rows not strictly ascending at key " + std::to_string(rows[i].key);
        } else {
          const ScanIndex* si = find(rows[i].key);
          if (!si || !si->could_hold(rows[i].value, sc.invoke_ns, sc.response_ns)) {
            about = rows[i].key;
            problem = "key " + std::to_string(rows[i].key) + " returned with value " +
                      history.render_value(rows[i].value) +
                      ", which it cannot have held at any moment of the scan";
          }
        }
      }
      if (problem.empty() && sc.arg > 0) {
        Key upper = rows.size() == sc.arg ? rows.back().key : ~Key{0};
        size_t r = 0;
        for (auto it = std::lower_bound(key_list.begin(), key_list.end(), sc.key);
             it != key_list.end() && *it <= upper; ++it) {
          while (r < rows.size() && rows[r].key < *it) ++r;
          if (r < rows.size() && rows[r].key == *it) continue;
          if (idx[it - key_list.begin()].present_throughout(sc.invoke_ns, sc.response_ns)) {
            about = *it;
            problem = "key " + std::to_string(*it) +
                      " was present throughout the scan and within its range, but is missing";
            break;
          }
        }
      }
      if (!problem.empty()) {
        res.failing_scan = sc;
        res.scan_problem = problem;
        std::vector<Operation> w{sc};
        if (about) {
          std::vector<Operation> near;
          for (const KeyRange& kr : keys)
            if (kr.key == *about)
              for (size_t i = kr.begin; i < kr.end; ++i)
                if (ops[i].invoke_ns <= sc.response_ns) near.push_back(ops[i]);
          if (near.size() > 20) near.erase(near.begin(), near.end() - 20);
          w.insert(w.end(), near.begin(), near.end());
        }
        std::sort(w.begin(), w.end(),
                  [](const Operation& a, const Operation& b) { return a.invoke_ns < b.invoke_ns; });
        res.smallest_failing_history = w;
        res.details = render_ops(history, w, opt.max_rendered_ops);
        break;
      }
    }
  }
  res.operations_checked += res.scans_checked;

  if (bad || res.failing_scan) {
    res.verdict = Verdict::kViolation;
  } else if (!res.unknown_keys.empty() || res.unknown) {
    res.verdict = Verdict::kUnknown;
  } else {
    res.verdict = Verdict::kLinearizable;
  }
  res.linearizable = res.verdict == Verdict::kLinearizable;
  res.unknown = res.verdict == Verdict::kUnknown;
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace dmrt
