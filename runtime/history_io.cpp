// Text form of a History (see history_io.h for the format).
#include "runtime/history_io.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace dmrt {

namespace {

constexpr std::string_view kHeader = "# dmrt history 1";

bool parse_kind(std::string_view s, OpKind& k) {
  for (OpKind c : {OpKind::kSearch, OpKind::kInsert, OpKind::kUpdate, OpKind::kRemove,
                   OpKind::kScan, OpKind::kRmw}) {
    if (s == to_string(c)) {
      k = c;
      return true;
    }
  }
  return false;
}

template <typename T>
bool parse_num(std::string_view s, T& v, int base = 10) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  return ec == std::errc() && p == s.data() + s.size();
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> f;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) f.push_back(line.substr(i, j - i));
    i = j;
  }
  return f;
}

}  // namespace

void save_history(const History& h, std::ostream& out) {
  out << kHeader << "\n";
  out << "# kind client key arg out ok invoke_ns response_ns [row_key:row_value ...]\n";
  char buf[256];
  for (const Operation& o : h.ops) {
    uint64_t out_field = o.kind == OpKind::kScan ? 0 : o.out;
    int n = std::snprintf(buf, sizeof buf, "%s %u %llu %llx %llx %d %llu ", to_string(o.kind),
                          o.client, static_cast<unsigned long long>(o.key),
                          static_cast<unsigned long long>(o.arg),
                          static_cast<unsigned long long>(out_field), o.ok ? 1 : 0,
                          static_cast<unsigned long long>(o.invoke_ns));
    out.write(buf, n);
    if (o.pending())
      out << '-';
    else
      out << o.response_ns;
    if (o.kind == OpKind::kScan && !o.pending()) {
      for (const ScanRow& r : h.rows_of(o)) {
        n = std::snprintf(buf, sizeof buf, " %llu:%llx", static_cast<unsigned long long>(r.key),
                          static_cast<unsigned long long>(r.value));
        out.write(buf, n);
      }
    }
    out << '\n';
  }
}

void save_history(const History& h, const std::string& path) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) throw std::runtime_error(path + ": cannot open for writing");
  save_history(h, f);
  f.flush();
  if (!f) throw std::runtime_error(path + ": write failed");
}

History load_history(std::istream& in) {
  History h;
  std::string line;
  size_t lineno = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lineno == 1) {
      if (line != kHeader)
        throw std::runtime_error("line 1: not a dmrt history (expected \"" + std::string(kHeader) +
                                 "\")");
      header = true;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&](const std::string& why) {
      return std::runtime_error("line " + std::to_string(lineno) + ": " + why);
    };
    auto f = split(line);
    if (f.size() < 8) throw bad("expected at least 8 fields, found " + std::to_string(f.size()));
    Operation o;
    int ok = 0;
    if (!parse_kind(f[0], o.kind)) throw bad("unknown kind '" + std::string(f[0]) + "'");
    if (!parse_num(f[1], o.client)) throw bad("bad client");
    if (!parse_num(f[2], o.key)) throw bad("bad key");
    if (!parse_num(f[3], o.arg, 16)) throw bad("bad arg");
    if (!parse_num(f[4], o.out, 16)) throw bad("bad out");
    if (!parse_num(f[5], ok) || (ok != 0 && ok != 1)) throw bad("ok must be 0 or 1");
    o.ok = ok == 1;
    if (!parse_num(f[6], o.invoke_ns)) throw bad("bad invoke_ns");
    if (f[7] == "-") {
      o.response_ns = kNoResponse;
    } else if (!parse_num(f[7], o.response_ns) || o.response_ns == kNoResponse) {
      throw bad("bad response_ns");
    } else if (o.response_ns < o.invoke_ns) {
      throw bad("response before invocation");
    }
    if (o.kind == OpKind::kScan) {
      o.out = h.scan_rows.size();
      for (size_t i = 8; i < f.size(); ++i) {
        size_t colon = f[i].find(':');
        ScanRow r;
        if (colon == std::string_view::npos || !parse_num(f[i].substr(0, colon), r.key) ||
            !parse_num(f[i].substr(colon + 1), r.value, 16))
          throw bad("bad scan row '" + std::string(f[i]) + "'");
        h.scan_rows.push_back(r);
      }
      o.rows = static_cast<uint32_t>(f.size() - 8);
      if (o.pending() && o.rows) throw bad("a pending scan has no rows");
    } else if (f.size() != 8) {
      throw bad("only scans have rows");
    }
    h.ops.push_back(o);
  }
  if (!header) throw std::runtime_error("empty input: not a dmrt history");
  return h;
}

History load_history(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error(path + ": cannot open");
  try {
    return load_history(f);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace dmrt
