// YCSB trace files: parsing, measuring and cutting into parts, streaming, writing (trace.h).
#include "bench/workload/trace.h"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>

namespace dmrt::bench::trace {

namespace {

constexpr size_t kBlock = size_t{1} << 20;    // read 1 MiB at a time
constexpr size_t kMaxLine = size_t{1} << 20;  // a longer line is malformed, not buffered on

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

// The next token of `s` from `pos` (skipping blanks); empty at the end.
std::string_view token(std::string_view s, size_t& pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  const size_t b = pos;
  while (pos < s.size() && !is_space(s[pos])) ++pos;
  return s.substr(b, pos - b);
}

// A counted line: not blank, not a comment.
bool counted(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && is_space(line[i])) ++i;
  return i < line.size() && line[i] != '#';
}

std::string shown(std::string_view s) {
  std::string out(s.substr(0, 60));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return s.size() > 60 ? out + "..." : out;
}

[[noreturn]] void bad(const std::string& where, std::string_view line, const std::string& why) {
  throw TraceError(where + ": " + why + " (line: \"" + shown(line) + "\")");
}

// Reads a file block by block and hands each line (without '\n') to f(line, physical line no.).
template <class F>
void each_line(const std::string& path, F&& f) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!in) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  std::vector<char> buf(kBlock);
  std::string carry;
  uint64_t no = 0, byte = 0;
  for (;;) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), in.get());
    if (n == 0) break;
    size_t b = 0;
    for (size_t i = 0; i < n; ++i) {
      if (buf[i] != '\n') continue;
      std::string_view line(buf.data() + b, i - b);
      uint64_t at = byte + b;
      if (!carry.empty()) {
        at -= carry.size();
        carry.append(line);
        line = carry;
      }
      f(line, ++no, at);
      carry.clear();
      b = i + 1;
    }
    carry.append(buf.data() + b, n - b);
    if (carry.size() > kMaxLine)
      throw TraceError(path + ":" + std::to_string(no + 1) + ": a line of more than " +
                       std::to_string(kMaxLine) + " bytes: not a trace file");
    byte += n;
  }
  if (std::ferror(in.get())) throw TraceError(path + ": read error: " + std::strerror(errno));
  if (!carry.empty()) f(std::string_view(carry), ++no, byte - carry.size());
}

}  // namespace

std::string_view op_word(OpKind kind) {
  switch (kind) {
    case OpKind::kInsert:
      return "INSERT";
    case OpKind::kSearch:
      return "READ";
    case OpKind::kUpdate:
      return "UPDATE";
    case OpKind::kScan:
      return "SCAN";
    case OpKind::kRemove:
      return "DELETE";
    case OpKind::kRmw:
      break;
  }
  return {};
}

void parse_line(std::string_view line, KeyKind kind, size_t max_bytes, const std::string& where,
                Op& out) {
  size_t pos = 0;
  const std::string_view op = token(line, pos);
  if (op == "INSERT")
    out.kind = OpKind::kInsert;
  else if (op == "READ")
    out.kind = OpKind::kSearch;
  else if (op == "UPDATE")
    out.kind = OpKind::kUpdate;
  else if (op == "SCAN")
    out.kind = OpKind::kScan;
  else if (op == "DELETE")
    out.kind = OpKind::kRemove;
  else
    bad(where, line, "not an operation (INSERT, READ, UPDATE, SCAN or DELETE)");
  std::string_view key = token(line, pos);
  if (key == "usertable") key = token(line, pos);  // YCSB's basic binding: the table first
  if (key.empty()) bad(where, line, "no key");
  if (kind == KeyKind::kInteger) {
    std::string_view digits = key.substr(0, 4) == "user" ? key.substr(4) : key;
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
      bad(where, line,
          "the key \"" + shown(key) +
              "\" is not a decimal integer (with or without \"user\"); a trace of byte-string "
              "keys needs --key-size above 8");
    if (v == std::numeric_limits<uint64_t>::max())
      bad(where, line, "the key is 2^64 - 1, which has no dmrt key (keys are the trace's + 1)");
    out.key = v + 1;
    out.bytes = {};
  } else {
    if (key.size() > max_bytes)
      bad(where, line,
          "the key has " + std::to_string(key.size()) + " bytes, above --key-size " +
              std::to_string(max_bytes));
    out.bytes = key;
    out.key = 0;
  }
  out.scan_count = 0;
  if (out.kind == OpKind::kScan) {
    const std::string_view n = token(line, pos);
    uint32_t c = 0;
    auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), c);
    if (n.empty() || ec != std::errc() || end != n.data() + n.size() || c == 0)
      bad(where, line, "SCAN needs a count from 1 to 4294967295 after its key");
    out.scan_count = c;
  }
  const std::string_view rest = token(line, pos);
  if (!rest.empty() && rest.front() != '[') bad(where, line, "unexpected \"" + shown(rest) + "\"");
}

TraceFile::TraceFile(std::string path, unsigned parts, KeyKind kind, size_t max_bytes)
    : path_(std::move(path)), kind_(kind), max_bytes_(max_bytes) {
  if (parts == 0) throw TraceError(path_ + ": no client to replay it");
  // Two passes and a seek per part: only a regular file will do (not a pipe, not /dev/zero).
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0)
    throw TraceError(path_ + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw TraceError(path_ + ": not a regular file");
  // Pass 1: check every line; count the operations and the inserts.
  Op op;
  each_line(path_, [&](std::string_view line, uint64_t no, uint64_t) {
    if (!counted(line)) return;
    parse_line(line, kind_, max_bytes_, path_ + ":" + std::to_string(no), op);
    ++lines_;
    ++kinds_[static_cast<size_t>(op.kind)];
  });
  // The parts' sizes, then pass 2: where each part starts.
  starts_.resize(parts);
  const uint64_t base = lines_ / parts, extra = lines_ % parts;
  for (unsigned i = 0; i < parts; ++i) starts_[i].ops = base + (i < extra ? 1 : 0);
  unsigned next = 0;
  uint64_t seen = 0, first_of_next = 0;
  auto skip_empty = [&] {  // empty parts start where the file ends
    while (next < parts && starts_[next].ops == 0) ++next;
  };
  skip_empty();
  each_line(path_, [&](std::string_view line, uint64_t no, uint64_t at) {
    if (!counted(line)) return;
    if (next < parts && seen == first_of_next) {
      starts_[next].byte = at;
      starts_[next].line = no - 1;
      first_of_next += starts_[next].ops;
      ++next;
      skip_empty();
    }
    ++seen;
  });
}

uint64_t TraceFile::part_lines(unsigned part) const {
  return starts_.at(part).ops;
}

TraceFile::Reader TraceFile::reader(unsigned part) const {
  return Reader(*this, part, kind_, max_bytes_);
}

TraceFile::Reader::Reader(const TraceFile& f, unsigned part, KeyKind kind, size_t max_bytes)
    : path_(f.path_),
      file_(nullptr, &std::fclose),
      kind_(kind),
      max_bytes_(max_bytes),
      left_(f.starts_.at(part).ops),
      line_no_(f.starts_.at(part).line),
      buf_(kBlock) {
  if (left_ == 0) return;
  file_.reset(std::fopen(path_.c_str(), "rb"));
  if (!file_) throw TraceError(path_ + ": cannot open: " + std::strerror(errno));
  if (std::fseek(file_.get(), static_cast<long>(f.starts_[part].byte), SEEK_SET) != 0)
    throw TraceError(path_ + ": cannot seek: " + std::strerror(errno));
}

bool TraceFile::Reader::read_line(std::string_view& line) {
  carry_.clear();
  for (;;) {
    if (pos_ == end_) {
      end_ = std::fread(buf_.data(), 1, buf_.size(), file_.get());
      pos_ = 0;
      if (end_ == 0) {
        if (std::ferror(file_.get()))
          throw TraceError(path_ + ": read error: " + std::strerror(errno));
        if (carry_.empty()) return false;  // the file shrank under us: the caller reports it
        line = carry_;
        return true;
      }
    }
    const char* nl = static_cast<const char*>(std::memchr(buf_.data() + pos_, '\n', end_ - pos_));
    if (!nl) {
      carry_.append(buf_.data() + pos_, end_ - pos_);
      pos_ = end_;
      if (carry_.size() > kMaxLine)
        throw TraceError(path_ + ":" + std::to_string(line_no_ + 1) + ": a line of more than " +
                         std::to_string(kMaxLine) + " bytes");
      continue;
    }
    const size_t len = static_cast<size_t>(nl - (buf_.data() + pos_));
    if (carry_.empty()) {
      line = std::string_view(buf_.data() + pos_, len);
    } else {
      carry_.append(buf_.data() + pos_, len);
      line = carry_;
    }
    pos_ += len + 1;
    return true;
  }
}

bool TraceFile::Reader::next(Op& out) {
  while (left_ > 0) {
    std::string_view line;
    if (!read_line(line))
      throw TraceError(path_ + ": ended before its line " + std::to_string(line_no_ + 1) +
                       ": the file changed since it was measured");
    ++line_no_;
    if (!counted(line)) continue;
    parse_line(line, kind_, max_bytes_, path_ + ":" + std::to_string(line_no_), out);
    --left_;
    return true;
  }
  return false;
}

Writer::Writer(std::string path) : path_(std::move(path)), f_(std::fopen(path_.c_str(), "w")) {
  if (!f_) throw TraceError(path_ + ": cannot write: " + std::strerror(errno));
}

Writer::~Writer() {
  if (f_) std::fclose(f_);
}

void Writer::write(OpKind kind, Key key, uint32_t scan_count) {
  const std::string_view w = op_word(kind);
  if (w.empty()) throw TraceError(path_ + ": a read-modify-write has no trace line");
  if (key == 0) throw TraceError(path_ + ": key 0 has no trace line (trace keys are dmrt's - 1)");
  char line[64];
  int n = kind == OpKind::kScan
              ? std::snprintf(line, sizeof line, "%.*s %llu %u\n", static_cast<int>(w.size()),
                              w.data(), static_cast<unsigned long long>(key - 1), scan_count)
              : std::snprintf(line, sizeof line, "%.*s %llu\n", static_cast<int>(w.size()),
                              w.data(), static_cast<unsigned long long>(key - 1));
  if (std::fwrite(line, 1, static_cast<size_t>(n), f_) != static_cast<size_t>(n))
    throw TraceError(path_ + ": write error: " + std::strerror(errno));
  ++written_;
}

void Writer::close() {
  if (!f_) return;
  const bool ok = std::fflush(f_) == 0 && !std::ferror(f_);
  const int err = errno;
  std::fclose(f_);
  f_ = nullptr;
  if (!ok) throw TraceError(path_ + ": write error: " + std::strerror(err));
}

}  // namespace dmrt::bench::trace
