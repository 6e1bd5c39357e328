// Rendering of history records for reports (values by hash, or by text when the history kept it).
#include <algorithm>
#include <cstdio>

#include "check/history.h"

namespace dmrt {

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
