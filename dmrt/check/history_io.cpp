// Text form of a History (see history_io.h for the format).
#include "dmrt/check/history_io.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <istream>
#include <map>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "dmrt/check/journal.h"
#include "dmrt/check/report.h"

namespace dmrt {

namespace {

constexpr std::string_view kHeader = "# dmrt history 2";
constexpr std::string_view kHeaderV1 = "# dmrt history 1";
constexpr std::string_view kEnd = "# end ";     // "# end N operations"
constexpr std::string_view kClock = "# clock";  // "# clock bound_ns N"
constexpr std::string_view kPart = "# part";    // "# part R of M nodes N0 ... N(M-1)"
// More compute processes than any run has: a part line past it is not believed.
constexpr uint64_t kMaxParts = 65536;

// Lines of a stream, each at most max_line_bytes, at most max_bytes in all. next() is false at
// the end; complete() says whether the input's last line ended with a newline.
class LineReader {
 public:
  LineReader(std::istream& in, const HistoryLimits& limits) : in_(in), limits_(limits) {}

  bool next(std::string& line) {
    line.clear();
    for (;;) {
      if (pos_ == len_ && !fill()) {
        if (line.empty()) return false;
        complete_ = false;  // the last line has no newline
        return true;
      }
      const char* start = buf_ + pos_;
      const void* nl = std::memchr(start, '\n', len_ - pos_);
      size_t take = nl ? static_cast<const char*>(nl) - start : len_ - pos_;
      if (line.size() + take > limits_.max_line_bytes)
        throw HistoryFormatError("line " + std::to_string(lineno_ + 1) + " is longer than " +
                                 mib_text(limits_.max_line_bytes) +
                                 ", the cap on one line of a history (not a dmrt history?)");
      line.append(start, take);
      pos_ += take;
      if (nl) {
        ++pos_;
        ++lineno_;
        return true;
      }
    }
  }
  size_t lineno() const { return lineno_; }
  bool complete() const { return complete_; }

 private:
  bool fill() {
    if (!in_) return false;
    in_.read(buf_, sizeof buf_);
    len_ = static_cast<size_t>(in_.gcount());
    pos_ = 0;
    total_ += len_;
    if (total_ > limits_.max_bytes)
      throw HistoryFormatError("the input is larger than " + mib_text(limits_.max_bytes) +
                               ", the cap on a history file (raise it with --max-history-mb)");
    return len_ > 0;
  }

  std::istream& in_;
  HistoryLimits limits_;
  char buf_[1 << 16];
  size_t pos_ = 0, len_ = 0, lineno_ = 0;
  uint64_t total_ = 0;
  bool complete_ = true;
};

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

// The fields after "# part" into h.part_rank and h.part_nodes; "" or what is wrong.
std::string parse_part(std::string_view rest, History& h) {
  const auto f = split(rest);
  uint64_t rank = 0, of = 0;
  if (f.size() < 4 || f[1] != "of" || f[3] != "nodes" || !parse_num(f[0], rank) ||
      !parse_num(f[2], of))
    return "malformed part line";
  if (of == 0 || of > kMaxParts || rank >= of)
    return "part " + std::string(f[0]) + " of " + std::string(f[2]) + " is not a part";
  uint64_t incarnation = 0;
  if (f.size() == 6 + of && f[4 + of] == "incarnation") {
    if (!parse_num(f[5 + of], incarnation) || incarnation >= kMaxParts)
      return "bad incarnation '" + std::string(f[5 + of]) + "'";
  } else if (f.size() != 4 + of) {
    return "the part line lists " + std::to_string(f.size() - 4) + " nodes for " +
           std::to_string(of) + " parts";
  }
  std::vector<uint32_t> nodes(of);
  for (uint64_t i = 0; i < of; ++i)
    if (!parse_num(f[4 + i], nodes[i])) return "bad node '" + std::string(f[4 + i]) + "'";
  h.part_rank = static_cast<uint32_t>(rank);
  h.part_nodes = std::move(nodes);
  h.part_incarnation = static_cast<uint32_t>(incarnation);
  return "";
}

// Which parts of their run a set of loaded parts lacks: "" when none (or when no file says it
// is a part), else a sentence naming them. Throws for parts of different runs or a part twice.
std::string missing_parts(const std::vector<std::string>& files,
                          const std::vector<std::vector<uint32_t>>& nodes_of,
                          const std::vector<std::pair<uint32_t, uint32_t>>& part_of) {
  const std::vector<uint32_t>* run = nullptr;
  std::map<std::pair<uint32_t, uint32_t>, const std::string*> have;  // (rank, incarnation) -> file
  for (size_t i = 0; i < files.size(); ++i) {
    if (nodes_of[i].empty()) continue;
    if (run && *run != nodes_of[i])
      throw HistoryFormatError(files[i] +
                               " is a part of another run than the files before it "
                               "(its part line lists other compute nodes)");
    run = &nodes_of[i];
    auto [it, fresh] = have.try_emplace(part_of[i], &files[i]);
    const auto [rank, inc] = part_of[i];
    if (!fresh)
      throw HistoryFormatError("part " + std::to_string(rank) +
                               (inc ? " incarnation " + std::to_string(inc) : std::string()) +
                               " (node " + std::to_string((*run)[rank]) + ") is both " +
                               *it->second + " and " + files[i]);
  }
  if (!run) return "";
  // Every rank, and each rank's incarnations from 0 to its last (a replacement's part without
  // the part or journal of the process it replaced lacks that one's operations).
  std::map<uint32_t, uint32_t> incs;  // rank -> its incarnations, 0 to its last part's
  for (const auto& [part, file] : have) incs[part.first] = part.second + 1;
  std::string given, missing;
  size_t ranks = 0, lacking = 0;
  for (uint32_t r = 0; r < run->size(); ++r) {
    const uint32_t n = incs.count(r) ? incs[r] : 0;
    const std::string node = std::to_string((*run)[r]);
    ranks += n > 0;
    if (n == 0) {
      missing += (missing.empty() ? "" : ", ") + node;
      ++lacking;
    }
    for (uint32_t k = 0; k < n; ++k) {
      const std::string name = k ? node + " incarnation " + std::to_string(k) : node;
      const bool there = have.count({r, k});
      std::string& list = there ? given : missing;
      list += (list.empty() ? "" : ", ") + name;
      lacking += !there;
    }
  }
  if (missing.empty()) return "";
  return "the parts of " + std::to_string(ranks) + " of the run's " + std::to_string(run->size()) +
         " compute processes (nodes " + given + "; missing: node" + (lacking > 1 ? "s " : " ") +
         missing + ")";
}

}  // namespace

void save_history(const History& h, std::ostream& out) {
  out << kHeader << "\n";
  if (h.clock_bound_ns) out << kClock << " bound_ns " << h.clock_bound_ns << "\n";
  if (!h.part_nodes.empty()) {
    out << kPart << " " << h.part_rank << " of " << h.part_nodes.size() << " nodes";
    for (uint32_t n : h.part_nodes) out << " " << n;
    if (h.part_incarnation) out << " incarnation " << h.part_incarnation;
    out << "\n";
  }
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
  out << kEnd << h.ops.size() << " operations\n";
}

void save_history(const History& h, const std::string& path) {
  std::ofstream f(path, std::ios::trunc);
  if (!f)
    throw std::runtime_error(path + ": cannot open for writing (" + std::strerror(errno) + ")");
  save_history(h, f);
  f.flush();
  if (!f) throw std::runtime_error(path + ": write failed");
}

History load_history(std::istream& in, const HistoryLimits& limits) {
  History h;
  LineReader reader(in, limits);
  std::string line;
  bool header = false, v2 = false, ended = false, clock = false;
  uint64_t announced = 0;
  while (reader.next(line)) {
    const size_t lineno = reader.lineno() + (reader.complete() ? 0 : 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto bad = [&](const std::string& why) {
      return HistoryFormatError("line " + std::to_string(lineno) + ": " + why);
    };
    if (!header) {
      if (line != kHeader && line != kHeaderV1)
        throw HistoryFormatError("line 1: not a dmrt history (expected \"" + std::string(kHeader) +
                                 "\")");
      header = true;
      v2 = line == kHeader;
      continue;
    }
    if (!reader.complete())
      throw HistoryTruncated("truncated: line " + std::to_string(lineno) +
                             " is cut short (no newline at the end of the input)");
    if (ended) {
      if (line.empty()) continue;
      throw bad("content after the end line");
    }
    if (v2 && line.starts_with(kEnd)) {
      auto f = split(std::string_view(line).substr(kEnd.size()));
      if (f.size() != 2 || f[1] != "operations" || !parse_num(f[0], announced))
        throw bad("malformed end line (expected \"# end N operations\")");
      if (announced != h.ops.size())
        throw bad("the end line announces " + std::to_string(announced) + " operations, " +
                  std::to_string(h.ops.size()) + " precede it");
      ended = true;
      continue;
    }
    if (v2 && line.starts_with(kClock) &&
        (line.size() == kClock.size() || line[kClock.size()] == ' ')) {
      auto f = split(std::string_view(line).substr(kClock.size()));
      if (clock) throw bad("a second clock line");
      if (!h.ops.empty()) throw bad("the clock line must precede the operations");
      if (f.size() != 2 || f[0] != "bound_ns" || !parse_num(f[1], h.clock_bound_ns))
        throw bad("malformed clock line (expected \"# clock bound_ns N\")");
      clock = true;
      continue;
    }
    if (v2 && line.starts_with(kPart) &&
        (line.size() == kPart.size() || line[kPart.size()] == ' ')) {
      if (!h.part_nodes.empty()) throw bad("a second part line");
      if (!h.ops.empty()) throw bad("the part line must precede the operations");
      if (std::string why = parse_part(std::string_view(line).substr(kPart.size()), h);
          !why.empty())
        throw bad(why + " (expected \"# part R of M nodes N0 ... N(M-1)\")");
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
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
  if (!header) throw HistoryFormatError("empty input: not a dmrt history");
  if (v2 && !ended)
    throw HistoryTruncated("truncated: the history ends after line " +
                           std::to_string(reader.lineno()) + " (" + std::to_string(h.ops.size()) +
                           " operations) without its \"# end\" line; the file was cut short");
  return h;
}

History load_history(const std::string& path, const HistoryLimits& limits) {
  // A regular file larger than the cap is refused before reading a byte of it.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<uint64_t>(st.st_size) > limits.max_bytes)
    throw HistoryFormatError(path + ": " + std::to_string(st.st_size) + " bytes is more than " +
                             mib_text(limits.max_bytes) +
                             ", the cap on a history file (raise it with --max-history-mb)");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw HistoryFormatError(path + ": cannot open (" + std::strerror(errno) + ")");
  try {
    return load_history(f, limits);
  } catch (const HistoryTruncated& e) {
    throw HistoryTruncated(path + ": " + e.what());
  } catch (const HistoryFormatError& e) {
    throw HistoryFormatError(path + ": " + e.what());
  }
}

History load_history_union(const std::vector<std::string>& files, const HistoryLimits& limits,
                           std::vector<ClockWidening>* widened, std::string* partial) {
  History h;
  std::map<uint32_t, const std::string*> client_file;  // each client's operations in one file
  std::vector<std::vector<uint32_t>> nodes_of;
  std::vector<std::pair<uint32_t, uint32_t>> part_of;  // (rank, incarnation) of each file
  for (const std::string& file : files) {
    // A journal: the part of a process that died mid-run (dmrt/check/journal.h).
    History part =
        is_history_journal(file) ? load_history_journal(file) : load_history(file, limits);
    nodes_of.push_back(std::move(part.part_nodes));
    part_of.emplace_back(part.part_rank, part.part_incarnation);
    part.part_nodes.clear();
    std::set<uint32_t> seen;
    for (const Operation& op : part.ops) {
      if (!seen.insert(op.client).second) continue;
      auto [it, fresh] = client_file.try_emplace(op.client, &file);
      if (!fresh)
        throw HistoryFormatError("client " + std::to_string(op.client) + " has operations in " +
                                 *it->second + " and in " + file +
                                 ": the parts of one run must come from different clients (is "
                                 "one file given twice?)");
    }
    if (widened && part.clock_bound_ns) widened->push_back({file, part.clock_bound_ns});
    append_history(h, std::move(part));
  }
  std::string missing = missing_parts(files, nodes_of, part_of);
  if (partial)
    *partial = std::move(missing);
  else if (!missing.empty())
    throw HistoryIncomplete(missing);
  return h;
}

std::string clock_widening_line(const std::vector<ClockWidening>& widened) {
  if (widened.empty()) return "";
  auto ms = [](uint64_t ns) {  // "0.812 ms", "31.5 us", "250 ns"
    char buf[48];
    if (ns >= 1'000'000)
      std::snprintf(buf, sizeof buf, "%.3f ms", static_cast<double>(ns) / 1e6);
    else if (ns >= 1000)
      std::snprintf(buf, sizeof buf, "%.1f us", static_cast<double>(ns) / 1e3);
    else
      std::snprintf(buf, sizeof buf, "%llu ns", static_cast<unsigned long long>(ns));
    return std::string(buf);
  };
  uint64_t most = 0;
  std::string parts;
  for (size_t i = 0; i < widened.size(); ++i) {
    most = std::max(most, widened[i].bound_ns);
    if (i < 8) parts += (i ? ", " : "") + widened[i].file + " by " + ms(widened[i].bound_ns);
  }
  if (widened.size() > 8) parts += " and " + std::to_string(widened.size() - 8) + " more";
  return "clock: " + std::to_string(widened.size()) + " part" + (widened.size() == 1 ? "" : "s") +
         " widened by up to " + ms(most) + " (" + parts +
         "; cross-host timestamps, docs/correctness.md)";
}

}  // namespace dmrt
