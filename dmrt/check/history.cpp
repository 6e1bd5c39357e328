// Rendering of history records for reports (values by hash, or by text when the history kept it).
#include <algorithm>
#include <cstdio>

#include "dmrt/check/history.h"

namespace dmrt {

void widen_by_clock_bound(History& h) {
  if (h.clock_bound_ns == 0) return;
  for (Operation& op : h.ops) widen_operation(op, h.clock_bound_ns);
  h.clock_bound_ns = 0;
}

void to_reference_clock(std::span<Operation> ops, ClockOffset c) {
  for (Operation& op : ops) {
    op.invoke_ns = to_reference_ns(op.invoke_ns, c);
    if (!op.pending())
      op.response_ns = std::min(to_reference_ns(op.response_ns, c), kNoResponse - 1);
  }
}

void to_reference_clock(History& h, ClockOffset c) {
  to_reference_clock(std::span<Operation>(h.ops), c);
  h.clock_bound_ns = clock_detail::sat_add(h.clock_bound_ns, c.bound_ns);
}

void append_history(History& into, History&& part) {
  widen_by_clock_bound(into);
  widen_by_clock_bound(part);
  const size_t base = into.scan_rows.size();
  into.scan_rows.insert(into.scan_rows.end(), part.scan_rows.begin(), part.scan_rows.end());
  into.ops.reserve(into.ops.size() + part.ops.size());
  for (Operation op : part.ops) {
    if (op.kind == OpKind::kScan) op.out += base;
    into.ops.push_back(op);
  }
  for (auto& [hash, v] : part.values) {
    auto [it, fresh] = into.values.try_emplace(hash, std::move(v));  // moves only if inserted
    if (!fresh && it->second != v) ++into.hash_collisions;
  }
  into.hash_collisions += part.hash_collisions;
  part = History{};
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

std::string History::render_ops(std::span<const Operation> ops, size_t limit) const {
  uint64_t base = ~0ull;
  for (const Operation& o : ops) base = std::min(base, o.invoke_ns);
  std::string s;
  for (size_t i = 0; i < ops.size() && i < limit; ++i) s += "  " + render(ops[i], base) + "\n";
  if (ops.size() > limit) s += "  ... " + std::to_string(ops.size() - limit) + " more\n";
  return s;
}

}  // namespace dmrt
