// YCSB trace files in the text format of the field's artifacts (SMART, CHIME: one operation per
// line, `INSERT k`, `READ k`, `UPDATE k`, `SCAN k n`, `DELETE k`): read split over clients and
// streamed, and written from dmrt's own generated workloads.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dmrt/runtime/error.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::bench::trace {

// A malformed or unreadable trace: the message names the file and, for a line, its number.
class TraceError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// One line. The key is `key` (integer keys) or `bytes` (byte-string keys, valid until the next
// line is read). `scan_count` only for kScan.
struct Op {
  OpKind kind = OpKind::kSearch;
  Key key = 0;
  std::string_view bytes;
  uint32_t scan_count = 0;
};

// How a line's key token becomes a key.
//   integer : decimal digits (after an optional `user`), 0 to 2^64 - 2; the index sees key + 1,
//             because dmrt's keys start at 1 (the artifacts' `monoint` keys start at 0). The
//             writer subtracts the one again, so a written trace replays to the same keys.
//   bytes   : the token's bytes as they are (email keys, `user...` strings), at most max_bytes.
enum class KeyKind { kInteger, kBytes };

// Parses one line (without its newline). Accepted, with spaces or tabs between tokens:
//   OP KEY [COUNT]                      the artifacts' files
//   OP usertable KEY [COUNT] [ ... ]    YCSB's `basic` binding output, fields ignored
// OP is INSERT, READ, UPDATE, SCAN or DELETE (upper case, as YCSB prints them). COUNT, for SCAN
// only, is 1 to 2^32 - 1. Throws TraceError naming `where` (file:line) when the line is none of
// these.
void parse_line(std::string_view line, KeyKind kind, size_t max_bytes, const std::string& where,
                Op& out);

// A trace file measured once (lines, and how many are INSERTs, for sizing the index) and cut into
// `parts` ranges of consecutive lines, one per client, as the artifacts' split_workload.py cuts
// them: part i holds the i-th run of floor(lines / parts) lines. The artifacts drop the remaining
// lines; here the first (lines mod parts) parts take one more line each, so every line runs.
// Blank lines and lines starting with '#' are skipped and not counted. The file is streamed in
// blocks: two passes to check every line and cut, then each part reads only its own range. A
// malformed line is a TraceError from the constructor, before anything runs.
class TraceFile {
 public:
  TraceFile(std::string path, unsigned parts, KeyKind kind = KeyKind::kInteger,
            size_t max_bytes = 8);

  const std::string& path() const { return path_; }
  uint64_t lines() const { return lines_; }  // operations (counted lines)
  uint64_t inserts() const { return count(OpKind::kInsert); }
  uint64_t count(OpKind k) const { return kinds_[static_cast<size_t>(k)]; }  // lines of a kind
  unsigned parts() const { return static_cast<unsigned>(starts_.size()); }
  uint64_t part_lines(unsigned part) const;

  // Streams one part's operations in file order.
  class Reader {
   public:
    // False at the end of the part. Throws TraceError for a malformed line.
    bool next(Op& out);
    uint64_t line_number() const { return line_no_; }  // of the last line returned (1-based)

   private:
    friend class TraceFile;
    Reader(const TraceFile& f, unsigned part, KeyKind kind, size_t max_bytes);
    bool read_line(std::string_view& line);
    std::string path_;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
    KeyKind kind_;
    size_t max_bytes_;
    uint64_t left_;     // operations still to return
    uint64_t line_no_;  // physical line number of the last line read
    std::vector<char> buf_;
    size_t pos_ = 0, end_ = 0;
    std::string carry_;  // a line that straddles two blocks
  };
  Reader reader(unsigned part) const;

 private:
  struct Start {
    uint64_t byte = 0;  // offset of the part's first line
    uint64_t line = 0;  // its physical line number - 1
    uint64_t ops = 0;   // counted lines in the part
  };
  std::string path_;
  KeyKind kind_;
  size_t max_bytes_;
  uint64_t lines_ = 0;
  std::array<uint64_t, kOpKinds> kinds_{};
  std::vector<Start> starts_;
};

// Writes operations in the artifacts' format (`OP KEY [COUNT]`), integer keys written as key - 1
// (see KeyKind). Throws TraceError when the file cannot be written.
class Writer {
 public:
  explicit Writer(std::string path);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  void write(OpKind kind, Key key, uint32_t scan_count = 0);
  void close();  // flushes; throws on a write error
  uint64_t written() const { return written_; }

 private:
  std::string path_;
  std::FILE* f_;
  uint64_t written_ = 0;
};

// The artifacts' word for an operation kind: INSERT, READ, UPDATE, SCAN, DELETE. A read-modify-
// write has none (YCSB's basic binding prints it as READ, then UPDATE).
std::string_view op_word(OpKind kind);

}  // namespace dmrt::bench::trace
