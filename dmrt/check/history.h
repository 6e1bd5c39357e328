// History recording for the correctness checkers: what each client invoked, what it got back, and
// when (invocation and response timestamps on the transport's clock, passed in by the caller).
//
// Each client owns one HistoryRecorder (no locks, no globals): it appends plain records to its own
// vector. After the clients have joined, the recorders are merged into one History, which
// dmrt/check/linearizability.h checks against the key-value model of dmrt/runtime/kv.h.
//
// Values are stored as 64-bit hashes (XXH3): the checker compares hashes, so two different values
// with equal hashes would be taken as equal (probability ~n^2/2^64; ValueMode::kFull keeps the
// strings too, renders them in reports, and counts any collision it sees).
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dmrt/runtime/clock_offset.h"
#include "dmrt/runtime/kv.h"

namespace dmrt {

// OpKind (dmrt/runtime/kv.h) names each operation. kRmw is recorded as ONE operation: it read the
// key's value (ok = found, out = the value read) and, when found, replaced it with `arg`
// atomically. A bench that performs a read-modify-write as two separate index calls (search, then
// update) must record two operations (kSearch and kUpdate), since the index gives no atomicity
// across them.

inline uint64_t value_hash(std::string_view v) {
  return XXH3_64bits(v.data(), v.size());
}

// Response time of an operation that never returned (the client stopped, crashed or timed out):
// its effect may or may not have happened, at any time after its invocation.
inline constexpr uint64_t kNoResponse = std::numeric_limits<uint64_t>::max();

// One operation as one client saw it. POD, 56 bytes.
struct Operation {
  uint64_t invoke_ns = 0;
  uint64_t response_ns = kNoResponse;
  Key key = 0;       // scan: `from`
  uint64_t arg = 0;  // insert/update/rmw: hash of the value written; scan: the count asked for
  uint64_t out = 0;  // search/rmw: hash of the value read (when ok); scan: first row in scan_rows
  uint32_t client = 0;
  uint32_t rows = 0;  // scan: number of rows returned
  OpKind kind = OpKind::kSearch;
  bool ok = false;  // the call's boolean result (search/rmw: found); scan: true

  bool pending() const { return response_ns == kNoResponse; }
};

struct ScanRow {
  Key key = 0;
  uint64_t value = 0;  // hash
};

enum class ValueMode : uint8_t {
  kHash,  // hashes only (default; cheapest)
  kFull,  // also keep hash -> value string, for readable reports and collision detection
};

class HistoryRecorder;

// All clients' operations (in no particular order) and the scan rows they refer to.
struct History {
  std::vector<Operation> ops;
  std::vector<ScanRow> scan_rows;
  std::unordered_map<uint64_t, std::string> values;  // kFull only
  uint64_t hash_collisions = 0;                      // kFull only: distinct values, equal hash
  // How far every timestamp may be from the reference clock's reading at that instant: nonzero
  // for a part of a multi-host run whose times were moved onto the reference node's clock
  // (to_reference_clock; docs/correctness.md, "Histories across hosts"). check_history() widens
  // every operation by it; parts with different bounds are widened before they are joined
  // (append_history).
  uint64_t clock_bound_ns = 0;
  // One compute process's part of a multi-process run: its rank and the run's compute nodes by
  // rank (empty for a whole history), so that a check of an incomplete set of parts can be
  // refused instead of reporting the violations the missing operations would explain.
  uint32_t part_rank = 0;
  std::vector<uint32_t> part_nodes;
  // Which process of that rank (0: the first; k: the k-th that replaced a dead one mid-run): a
  // rank's part is every incarnation's, 0 to the last.
  uint32_t part_incarnation = 0;

  size_t size() const { return ops.size(); }
  // Moves a recorder's records in (scan row indices are rebased).
  void append(HistoryRecorder&& r);
  void append(const HistoryRecorder& r);
  std::span<const ScanRow> rows_of(const Operation& scan) const {
    return {scan_rows.data() + scan.out, scan.rows};
  }
  // "c3 [1200,1450] insert(k=7, v=...) -> true"; times shown relative to time_base.
  std::string render(const Operation& op, uint64_t time_base = 0) const;
  std::string render_value(uint64_t hash) const;
  // One line per operation (at most `limit`, then "... N more"), times relative to the first.
  std::string render_ops(std::span<const Operation> ops, size_t limit) const;
};

class HistoryRecorder {
 public:
  explicit HistoryRecorder(uint32_t client = 0, size_t reserve_ops = 0,
                           ValueMode mode = ValueMode::kHash)
      : client_(client), mode_(mode) {
    ops_.reserve(reserve_ops);
  }

  // --- completed operations (invoke_ns taken before the call, response_ns after it) ----------
  void search(Key key, bool found, std::string_view value, uint64_t invoke_ns,
              uint64_t response_ns) {
    push(OpKind::kSearch, key, 0, found ? hash(value) : 0, found, invoke_ns, response_ns);
  }
  void insert(Key key, std::string_view value, bool ok, uint64_t invoke_ns, uint64_t response_ns) {
    push(OpKind::kInsert, key, hash(value), 0, ok, invoke_ns, response_ns);
  }
  void update(Key key, std::string_view value, bool ok, uint64_t invoke_ns, uint64_t response_ns) {
    push(OpKind::kUpdate, key, hash(value), 0, ok, invoke_ns, response_ns);
  }
  void remove(Key key, bool ok, uint64_t invoke_ns, uint64_t response_ns) {
    push(OpKind::kRemove, key, 0, 0, ok, invoke_ns, response_ns);
  }
  // Atomic read-modify-write: found = key was present (old_value read, new_value written).
  void rmw(Key key, std::string_view new_value, bool found, std::string_view old_value,
           uint64_t invoke_ns, uint64_t response_ns) {
    push(OpKind::kRmw, key, hash(new_value), found ? hash(old_value) : 0, found, invoke_ns,
         response_ns);
  }
  void scan(Key from, size_t count, std::span<const std::pair<Key, std::string>> rows,
            uint64_t invoke_ns, uint64_t response_ns) {
    size_t i = begin_scan(from, count, invoke_ns);
    complete_scan(i, rows, response_ns);
  }

  // --- two-phase recording, for operations that may never return --------------------------------
  // Records the invocation; the operation stays pending unless complete()/complete_scan() is
  // called with the index returned. `value` is the value written (insert/update/rmw).
  size_t begin(OpKind kind, Key key, std::string_view value, uint64_t invoke_ns) {
    bool writes = kind == OpKind::kInsert || kind == OpKind::kUpdate || kind == OpKind::kRmw;
    push(kind, key, writes ? hash(value) : 0, 0, false, invoke_ns, kNoResponse);
    return ops_.size() - 1;
  }
  // ok: the boolean result; read: the value returned (search/rmw when ok).
  void complete(size_t i, bool ok, std::string_view read, uint64_t response_ns) {
    Operation& op = ops_[i];
    op.ok = ok;
    if (ok && (op.kind == OpKind::kSearch || op.kind == OpKind::kRmw)) op.out = hash(read);
    op.response_ns = response_ns;
  }
  size_t begin_scan(Key from, size_t count, uint64_t invoke_ns) {
    push(OpKind::kScan, from, count, rows_.size(), true, invoke_ns, kNoResponse);
    return ops_.size() - 1;
  }
  void complete_scan(size_t i, std::span<const std::pair<Key, std::string>> rows,
                     uint64_t response_ns) {
    Operation& op = ops_[i];
    op.out = rows_.size();
    op.rows = static_cast<uint32_t>(rows.size());
    for (const auto& [k, v] : rows) rows_.push_back({k, hash(v)});
    op.response_ns = response_ns;
  }

  // A ready-made record (hashes already computed); scans must use scan()/begin_scan().
  void record(const Operation& op) { ops_.push_back(op); }

  uint32_t client() const { return client_; }
  size_t size() const { return ops_.size(); }
  const std::vector<Operation>& ops() const { return ops_; }
  void clear() {
    ops_.clear();
    rows_.clear();
    values_.clear();
  }

 private:
  friend struct History;

  uint64_t hash(std::string_view v) {
    uint64_t h = value_hash(v);
    if (mode_ == ValueMode::kFull) {
      auto [it, fresh] = values_.try_emplace(h, v);
      if (!fresh && it->second != v) ++collisions_;
    }
    return h;
  }
  void push(OpKind kind, Key key, uint64_t arg, uint64_t out, bool ok, uint64_t t0, uint64_t t1) {
    Operation& op = ops_.emplace_back();
    op.invoke_ns = t0;
    op.response_ns = t1;
    op.key = key;
    op.arg = arg;
    op.out = out;
    op.client = client_;
    op.kind = kind;
    op.ok = ok;
  }

  uint32_t client_;
  ValueMode mode_;
  std::vector<Operation> ops_;
  std::vector<ScanRow> rows_;
  std::unordered_map<uint64_t, std::string> values_;
  uint64_t collisions_ = 0;
};

inline void History::append(const HistoryRecorder& r) {
  size_t base = scan_rows.size();
  scan_rows.insert(scan_rows.end(), r.rows_.begin(), r.rows_.end());
  size_t first = ops.size();
  ops.insert(ops.end(), r.ops_.begin(), r.ops_.end());
  for (size_t i = first; i < ops.size(); ++i)
    if (ops[i].kind == OpKind::kScan) ops[i].out += base;
  for (const auto& [h, v] : r.values_) {
    auto [it, fresh] = values.try_emplace(h, v);
    if (!fresh && it->second != v) ++hash_collisions;
  }
  hash_collisions += r.collisions_;
}

inline void History::append(HistoryRecorder&& r) {
  append(static_cast<const HistoryRecorder&>(r));
  r.clear();
}

// Widens one operation by `bound_ns` on both sides: its invocation earlier (saturating at 0),
// its response, when it returned, later (saturating below kNoResponse). If every timestamp is
// within bound_ns of the true time, the widened interval contains the true one.
inline void widen_operation(Operation& op, uint64_t bound_ns) {
  op.invoke_ns = op.invoke_ns > bound_ns ? op.invoke_ns - bound_ns : 0;
  if (!op.pending())
    op.response_ns =
        op.response_ns < kNoResponse - 1 - bound_ns ? op.response_ns + bound_ns : kNoResponse - 1;
}

// Widens every operation by h.clock_bound_ns, then sets it to 0: the history then claims no
// precedence its clock bound does not support, and can be joined with other parts.
void widen_by_clock_bound(History& h);

// Moves timestamps taken on this process's steady clock onto the reference clock
// (dmrt/runtime/clock_offset.h): t -> t + c.offset_ns. Responses of pending operations stay
// pending. The span form is for a phase of the history measured on its own; the caller then sets
// clock_bound_ns to the largest bound used. The History form converts all and adds c.bound_ns to
// clock_bound_ns (errors of successive conversions add up).
void to_reference_clock(std::span<Operation> ops, ClockOffset c);
void to_reference_clock(History& h, ClockOffset c);

// The union of two parts of one run (`part` moved in, scan rows rebased, value tables merged).
// A part with a nonzero clock bound is widened first, `into` too when it has one: the union's
// operations then all carry their own part's uncertainty and the result's clock_bound_ns is 0.
void append_history(History& into, History&& part);

// Merges per-client recorders into one History.
inline History merge_histories(std::span<HistoryRecorder> recorders) {
  History h;
  size_t n = 0;
  for (auto& r : recorders) n += r.size();
  h.ops.reserve(n);
  for (auto& r : recorders) h.append(std::move(r));
  return h;
}

}  // namespace dmrt
