// Saving and loading a History as text, so that a run's history can be checked again offline
// (dmrt-check) or attached to a bug report.
//
// Format (version 1), one operation per line, fields separated by one space:
//   kind client key arg out ok invoke_ns response_ns [row_key:row_value ...]
// kind is the OpKind name (search, insert, update, remove, scan, rmw); arg, out and row values are
// value hashes in hex; response_ns is "-" for an operation that never returned; a scan lists its
// rows after the fixed fields (its `out` field is not written: rows follow inline). Lines starting
// with '#' are comments; the first line is "# dmrt history 1".
#pragma once

#include <iosfwd>
#include <string>

#include "runtime/history.h"

namespace dmrt {

void save_history(const History& history, std::ostream& out);
void save_history(const History& history, const std::string& path);  // throws on I/O error

// Throws std::runtime_error naming the line of the first malformed record.
History load_history(std::istream& in);
History load_history(const std::string& path);

}  // namespace dmrt
