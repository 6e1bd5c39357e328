// A history that outlives its process: each operation's invocation is stored in a file-backed
// shared mapping before the operation runs, and its response after it returns, so that a process
// killed mid-run (kill -9) leaves every operation it was ever told completed, and at most one in
// flight per client, for the checker.
//
// The file is the mapping itself: a store lands in the page cache when it retires, and the kernel
// keeps the pages when the process dies, with no write(2) on the operation's path. A kernel crash
// or power loss is not covered (nothing is synced): the journal is for process crashes.
//
// Layout: a 4 KiB header, then `ops` slots of 64 bytes (an Operation and its state word), then
// `rows` scan rows of 16 bytes. Slots are claimed with one atomic add each; a slot's state goes
// 0 (free) -> 1 (invoked: the Operation as invoked, response pending) -> 2 (returned), each step
// a release store after the fields it publishes. A reader takes state 1 as an operation that never
// returned (it may or may not have taken effect), exactly the history's pending operation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dmrt/check/history.h"

namespace dmrt {

class HistoryJournal {
 public:
  // Creates (or replaces) `path`, sparse, for up to `ops` operations and `rows` scan rows, as the
  // part `rank` of a run whose compute nodes by rank are `nodes`, by that rank's process
  // `incarnation` (History::part_rank, part_nodes, part_incarnation). Throws std::runtime_error
  // naming the path on any I/O error.
  static std::unique_ptr<HistoryJournal> create(const std::string& path, uint64_t ops,
                                                uint64_t rows, uint32_t rank,
                                                const std::vector<uint32_t>& nodes,
                                                uint32_t incarnation = 0);
  ~HistoryJournal();
  HistoryJournal(const HistoryJournal&) = delete;
  HistoryJournal& operator=(const HistoryJournal&) = delete;

  // The invocation of `op` (its response_ns is ignored: pending); returns its slot, or kFull when
  // the journal is full (the reader then refuses it as incomplete).
  static constexpr size_t kFull = ~size_t{0};
  size_t invoke(const Operation& op);
  // The response of slot i: the result, the value read (hash), when it returned.
  void respond(size_t i, bool ok, uint64_t out, uint64_t response_ns);
  // A scan's response: its rows (hashes) after the fixed fields.
  void respond_scan(size_t i, std::span<const ScanRow> rows, uint64_t response_ns);
  // The process ended cleanly and saved its part by other means: the file is removed.
  void discard();

  const std::string& path() const { return path_; }

 private:
  HistoryJournal(std::string path, void* base, size_t bytes);

  std::string path_;
  void* base_ = nullptr;  // the mapping: header, slots, rows (journal.cpp)
  size_t bytes_ = 0;
};

// Whether `path` starts as a journal does (its magic).
bool is_history_journal(const std::string& path);

// The history a journal holds: every returned operation, every invoked one as pending, with its
// part's rank and nodes. Throws HistoryFormatError (dmrt/check/history_io.h) for a file that is
// not a journal, is cut short, or filled up (operations would be missing).
History load_history_journal(const std::string& path);

}  // namespace dmrt
