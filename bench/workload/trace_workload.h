// dmrt-bench's generated workloads as YCSB trace files (--write-trace DIR), so that the same
// operations can run in another system (the artifacts replay such files) or again here.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "bench/cli/options.h"
#include "bench/workload/trace.h"
#include "bench/workload/workload.h"

namespace dmrt::bench::trace {

struct Written {
  std::string load_path, run_path;  // run_path empty for a load-only workload
  uint64_t load_ops = 0, run_ops = 0;
  std::array<uint64_t, kOpKinds> kinds{};  // run file lines by kind
};

// The artifacts' names: load_<keys>_workload<x> and txn_<keys>_workload<x>, where <keys> is
// `monoint` for --key-order ordered and `randint` otherwise.
inline std::string trace_name(const Options& o, bool load) {
  return std::string(load ? "load_" : "txn_") +
         (o.order() == KeyOrder::kOrdered ? "monoint" : "randint") + "_workload" + o.workload;
}

// Writes the load phase (records 0..keys-1 in order, as INSERTs) and the run phase (--ops
// operations of the mix) to two files in `dir`. The run is one stream, made by one generator in
// sequence, as YCSB makes its traces: each insert takes the next record at once, reads choose
// among the records loaded or inserted before them in the file. A replay cuts it into runs of
// consecutive lines, one per client, so clients meet the keys in the order YCSB would have
// issued them from one thread. A read-modify-write is written as a READ and an UPDATE of its
// key (the artifacts' files, from YCSB's basic binding, have no RMW line).
inline Written write_workload(const Options& o, const Mix& mix, const std::string& dir) {
  Written out;
  out.load_path = dir + "/" + trace_name(o, true);
  const uint64_t run_ops = mix.load_only ? 0 : o.ops;
  const auto expected_inserts =
      static_cast<uint64_t>(static_cast<double>(run_ops) * mix.insert * 2);
  const KeyMap keys = o.keyset == "ycsb"
                          ? KeyMap(o.order())
                          : KeyMap(o.keyset, o.keys + run_ops + 64, o.seed, o.order());
  {
    Writer w(out.load_path);
    for (uint64_t r = 0; r < o.keys; ++r) w.write(OpKind::kInsert, keys(r));
    w.close();
    out.load_ops = w.written();
  }
  if (mix.load_only) return out;
  out.run_path = dir + "/" + trace_name(o, false);
  KeyChooser chooser(make_chooser_spec(o.dist(), o.zipf_theta, o.keys, expected_inserts));
  Rng rng(o.seed * 0x9e3779b97f4a7c15ull + 1);
  uint64_t next_record = o.keys;
  Writer w(out.run_path);
  auto put = [&](OpKind k, Key key, uint32_t n = 0) {
    w.write(k, key, n);
    ++out.kinds[static_cast<size_t>(k)];
  };
  for (uint64_t i = 0; i < run_ops; ++i) {
    const OpKind kind = pick_op(mix, rng);
    if (kind == OpKind::kInsert) {
      put(kind, keys(next_record++));
      continue;
    }
    const Key key = keys(chooser.next(rng, next_record));
    if (kind == OpKind::kRmw) {
      put(OpKind::kSearch, key);
      put(OpKind::kUpdate, key);
    } else if (kind == OpKind::kScan) {
      put(kind, key, 1 + static_cast<uint32_t>(rng.below(mix.max_scan)));
    } else {
      put(kind, key);
    }
  }
  w.close();
  out.run_ops = w.written();
  return out;
}

}  // namespace dmrt::bench::trace
