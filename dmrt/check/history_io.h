// Saving and loading a History as text, so that a run's history can be checked again offline
// (dmrt-check) or attached to a bug report.
//
// Format (version 2), one operation per line, fields separated by one space:
//   kind client key arg out ok invoke_ns response_ns [row_key:row_value ...]
// kind is the OpKind name (search, insert, update, remove, scan, rmw); arg, out and row values are
// value hashes in hex; response_ns is "-" for an operation that never returned; a scan lists its
// rows after the fixed fields (its `out` field is not written: rows follow inline). Lines starting
// with '#' are comments; the first line is "# dmrt history 2" and the last "# end N operations":
// a file cut anywhere (even at a line boundary) is reported as truncated, never read as a shorter
// history. Version 1 files (no end line) are still read, without that protection. A part of a
// multi-host run has, right after the first line, "# clock bound_ns N": its History's
// clock_bound_ns (absent = 0; older readers take it for a comment). A part saved by one compute
// process of several has "# part R of M nodes N0 ... N(M-1)": its rank R and the run's compute
// nodes by rank (History::part_rank, part_nodes; absent = a whole history, as in older files).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "dmrt/check/history.h"

namespace dmrt {

// The input is not a well-formed history (what() names the line and what is wrong).
class HistoryFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The input is a history cut short (no end line, or fewer operations than it announces): a
// partial copy or a run that died while saving. Checking it would judge a history nobody ran.
class HistoryTruncated : public HistoryFormatError {
 public:
  using HistoryFormatError::HistoryFormatError;
};

// Bounds on what load_history reads, so that a wrong file (/dev/zero, a log) fails fast.
struct HistoryLimits {
  uint64_t max_bytes = uint64_t{1} << 30;    // whole input
  size_t max_line_bytes = size_t{16} << 20;  // one line (a scan with all its rows)
};

void save_history(const History& history, std::ostream& out);
void save_history(const History& history, const std::string& path);  // throws on I/O error

// Throws HistoryFormatError naming the line of the first malformed record, HistoryTruncated for a
// cut file, and HistoryFormatError naming the limit when the input passes one.
History load_history(std::istream& in, const HistoryLimits& limits = {});
History load_history(const std::string& path, const HistoryLimits& limits = {});

// A part widened by load_history_union: its file and clock bound.
struct ClockWidening {
  std::string file;
  uint64_t bound_ns = 0;
};

// The parts of a run are not all there: checking them alone could report violations that the
// missing operations explain. what() names the missing parts.
class HistoryIncomplete : public HistoryFormatError {
 public:
  using HistoryFormatError::HistoryFormatError;
};

// The union of the parts of one run, saved by its processes: each part is widened by its own
// clock bound before it joins (append_history), so the result has clock_bound_ns 0. Throws
// HistoryFormatError as load_history, when one client has operations in two files, and when
// parts name different runs or one part twice. `widened` (when given) receives the parts that had
// a nonzero bound. A set that lacks some of its run's parts (their "# part" lines say) throws
// HistoryIncomplete, unless `partial` is given: then it receives that sentence ("" when complete)
// and the union of the parts given is returned.
History load_history_union(const std::vector<std::string>& files, const HistoryLimits& limits = {},
                           std::vector<ClockWidening>* widened = nullptr,
                           std::string* partial = nullptr);
// "clock: 2 parts widened by up to 0.812 ms (a by 0.812 ms, b by 31.5 us; cross-host timestamps,
// docs/correctness.md)", or "" when none was.
std::string clock_widening_line(const std::vector<ClockWidening>& widened);

}  // namespace dmrt
