// HStore options: table sizing, server geometry, typed technique switches and test-only faults.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <string_view>

#include "dmrt/indexes/common/flush_points.h"
#include "dmrt/indexes/common/root_slots.h"
#include "dmrt/runtime/option_fields.h"

namespace dmrt::hstore {

// Where a port to non-coherent memory flushes (FlushHint; docs/cxl-porting.md, "Coherence"). The
// servers change the table's slots and the status word only by CAS on their own memory (the
// device executes them), and a client's request and its answer are messages, which stay
// coherent; what a port must add is around the records, which clients write and everyone reads,
// and the clients' reads of the table. The servers' READs go through the memory node's own cache.
enum class FlushPoint : uint8_t {
  kBucketInvalidate,  // a client's bucket READ and its status-word READs see memory
  kRecordInvalidate,  // a client's record READs (GET, degraded GET, SCAN) see memory (recycled)
  kRecordWriteBack,   // a client's new record is written back before its request is sent
  kServerInvalidate,  // the servers' READs of records (the HTS's key checks) and of the table
};
inline constexpr FlushPoint kFlushPoints[] = {
    FlushPoint::kBucketInvalidate, FlushPoint::kRecordInvalidate, FlushPoint::kRecordWriteBack,
    FlushPoint::kServerInvalidate};
constexpr std::string_view flush_point_name(FlushPoint p) {
  switch (p) {
    case FlushPoint::kBucketInvalidate:
      return "bucket_invalidate";
    case FlushPoint::kRecordInvalidate:
      return "record_invalidate";
    case FlushPoint::kRecordWriteBack:
      return "record_write_back";
    case FlushPoint::kServerInvalidate:
      return "server_invalidate";
  }
  return "?";
}

// Everything the creator decides is written into the meta block, so servers and attaching compute
// nodes agree with it; the client-side fields (marked) may differ per attaching compute node.
struct Options {
  // --- hash table (HTS, paper §4.1) ----------------------------------------------------------
  uint64_t expected_keys = 1 << 16;  // sizing: head buckets = next_pow2(keys / 7 / load_factor)
  double load_factor = 0.75;         // of the head buckets' slots (notes A6)
  double overflow_fraction = 0.5;    // overflow buckets, as a fraction of the head buckets
  // The longest key, in bytes; 8 keeps integer keys. Sizing like a value's length (records hold
  // the actual key): any other value (1..1024) stores byte keys of 1..key_size bytes in the
  // records, hashes their bytes and ships them in the messages (README "Long keys"). Set by
  // dmrt-bench's --key-size.
  uint32_t key_size = 8;
  // --- placement ---------------------------------------------------------------------------------
  int hts_node = -1;  // memory node of the hash-table server and its table (-1: first)
  int sls_node = -1;  // memory node of the skiplist server (-1: last memory node)
  unsigned root_slot = root_slots::kHstore;  // on the first memory node: points at the meta
  // --- servers (paper §4.1 threading model, notes A11/A13) -----------------------------------
  unsigned logs = 4;          // HTS update logs = HTS worker fibers
  unsigned partitions = 4;    // SLS skiplist partitions = SLS applier fibers
  unsigned query_fibers = 2;  // SLS fibers serving SCAN / degraded GET / dump
  unsigned ship_batch = 64;   // entries per HTS->SLS batch (clamped to one message)
  // --- technique switches (the paper's factor analysis) -----------------------------------------
  bool sync_skiplist = false;  // "HStore (sync)": SLS applies to the skiplist before it acks
  uint64_t apply_lag_ns = 0;   // SLS appliers leave entries younger than this in the log (a busy
                               // SLS); SCAN still drains everything first
  uint64_t grace_ns = 50'000'000;  // reclamation grace: an old record is freed this long after it
                                   // was unlinked; a reader slower than grace/2 retries
  // --- client side (per attaching compute node)
  // ----------------------------------------------------
  unsigned scan_reads_per_trip = 1;     // value reads posted together in SCAN (paper: 1)
  uint64_t status_poll_ns = 1'000'000;  // a waiting client re-reads the status word this often
  uint64_t op_timeout_ns = 120'000'000'000ull;  // a write/scan waiting longer throws TransportError
  // Test-only (client side, per attaching compute node): acts only in builds with
  // DMRT_FAULT_INJECTION (dmrt/indexes/common/faults.h). Never set it elsewhere.
  struct Faults {
    FlushPoints<FlushPoint> skip_flush;  // these flush points issue no hint (tests/coherence)
  } faults;

  // The fields a user sets (bench flags --hstore-*, JSON, TOML), each declared once. Placement
  // and the root slot stay with whoever deploys the servers.
  static constexpr auto fields();
};

constexpr auto Options::fields() {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  return option_fields(
      option_number("expected_keys", &Options::expected_keys,
                    "Keys the table is sized for (head buckets = keys / 7 / load factor)",
                    uint64_t{1}, kMax)
          .no_flag(),
      option_number("load_factor", &Options::load_factor, "Target load of the head buckets' slots",
                    0.01, 1.0),
      option_number("overflow_fraction", &Options::overflow_fraction,
                    "Overflow buckets, as a fraction of the head buckets", 0.0, 64.0),
      option_number("logs", &Options::logs, "HTS update logs (= HTS worker fibers)", 1u, 64u),
      option_number("partitions", &Options::partitions,
                    "SLS skiplist partitions (= SLS applier fibers)", 1u, 64u),
      option_number("query_fibers", &Options::query_fibers,
                    "SLS fibers serving scans, degraded reads and dumps", 1u, 64u),
      option_number("ship_batch", &Options::ship_batch,
                    "Log entries per HTS-to-SLS batch (clamped to one message)", 1u, 1u << 20),
      option_switch("sync_skiplist", &Options::sync_skiplist,
                    "\"HStore (sync)\": the SLS applies to its skiplist before it acknowledges"),
      option_number(
          "apply_lag_ns", &Options::apply_lag_ns,
          "SLS appliers leave log entries younger than this (a busy SLS; scans drain all)",
          uint64_t{0}, kMax),
      option_number("grace_ns", &Options::grace_ns,
                    "Reclamation grace: a replaced record is freed this long after its unlink",
                    uint64_t{1}, kMax),
      option_number("scan_reads_per_trip", &Options::scan_reads_per_trip,
                    "Value reads a scan posts together (the paper: 1)", 1u, 1u << 10),
      option_number("status_poll_ns", &Options::status_poll_ns,
                    "A waiting client re-reads its status word this often", uint64_t{1}, kMax),
      option_number("op_timeout_ns", &Options::op_timeout_ns,
                    "A write or scan waiting longer than this throws", uint64_t{1}, kMax));
}

// Per-host knobs of a server process (not shared through the meta block).
struct ServerOptions {
  unsigned root_slot = root_slots::kHstore;  // where the meta is published (first memory node)
  bool recover = false;          // HTS: rebuild the hash table from the SLS before serving
  uint64_t idle_sleep_us = 50;   // real-time transports: sleep when the whole server was idle
  uint64_t idle_after_us = 500;  // ... for this long (sim: set idle_sleep_us = 0)
  // Servers whose fibers share one host thread (Deployment's joint host) share when they were
  // last busy, so that neither sleeps the thread while the other has work; null: their own.
  std::atomic<uint64_t>* shared_busy = nullptr;
  // CPU work done on the server's own memory (untimed region access), charged where the transport
  // models server CPU (sim: Endpoint::charge_cpu); ignored elsewhere. Rough DRAM-bound costs.
  uint64_t request_cpu_ns = 100;   // HTS: decide, reserve, apply one request
  uint64_t skiplist_cpu_ns = 300;  // SLS: one skiplist insert/erase/lookup (pointer chasing)
  uint64_t row_cpu_ns = 20;        // SLS: one row scanned, dumped or rebuilt; HTS: one key rebuilt
  // Fibers the host started for this server (0: as many as the index needs, the in-process
  // Deployment). A node program starts its servers before the index exists; with fewer fibers
  // than the index's logs/partitions need, the server refuses instead of leaving logs undrained.
  unsigned host_fibers = 0;
  // Test-only faults that prove the checkers can fail, per server (never in the shared meta
  // block); compiled out without DMRT_FAULT_INJECTION (dmrt/indexes/common/faults.h).
  struct Faults {
    bool reply_before_apply = false;  // HTS answers the client before its table CAS (point reads
                                      // then miss acknowledged writes)
    bool scan_skips_drain = false;    // SLS answers SCAN without applying its log first
    // Kill point (HTS): when set, the first batch with two or more effects stops after half of
    // them are applied and before any reply, and stays there until the server is stopped, as if
    // killed mid-batch; the flag is raised on arrival (once for all servers sharing it).
    std::atomic<bool>* stall_mid_batch = nullptr;
    FlushPoints<FlushPoint> skip_flush;  // these flush points issue no hint (tests/coherence)
  } faults;
};

}  // namespace dmrt::hstore
