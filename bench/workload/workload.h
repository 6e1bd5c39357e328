// YCSB core workloads for dmrt-bench: operation mixes, key choosers and the record -> key map.
//
// The generators follow the YCSB core workload (Cooper et al., SoCC'10) and the zipfian generator
// of Gray et al. ("Quickly generating billion-record synthetic databases", SIGMOD'94). They are
// written from those descriptions; see docs/bench.md for the exact semantics and where they
// deviate from YCSB.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/workload/keysets.h"
#include "bench/workload/zipfian.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::bench {

// ---- operation kinds --------------------------------------------------------------------------

// OpKind and kOpKinds come from dmrt/runtime/kv.h. Reports (JSON, tables) name the remove "delete",
// as YCSB does.
constexpr std::string_view op_name(OpKind k) {
  return k == OpKind::kRemove ? "delete" : to_string(k);
}

// ---- random numbers -----------------------------------------------------------------------------

// xoshiro256** seeded through splitmix64: fast, good quality, one per worker.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) w = splitmix(seed);
  }
  uint64_t next() {
    uint64_t r = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return r;
  }
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n) (n > 0); Lemire's multiply-shift, bias below 2^-64 * n.
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

// FNV-1a 64 over the eight little-endian bytes of v (YCSB's fnvhash64 scrambling).
constexpr uint64_t fnv1a64(uint64_t v) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; ++i) {
    h ^= v & 0xff;
    h *= 0x100000001b3ull;
    v >>= 8;
  }
  return h;
}

// ---- record number -> key
// -------------------------------------------------------------------------

// How record numbers (0, 1, 2, ... in insertion order) become index keys.
//   hashed  : a fixed bijective 64-bit mix (YCSB's insertorder=hashed): hash indexes see random
//             keys, range indexes see keys scattered over the whole key space, and a scan from
//             key(r) returns whatever records follow it in key order (exactly what YCSB E does).
//   ordered : key = record + 1 (YCSB's insertorder=ordered): inserts append at the right end.
// Neither ever yields key 0 for a record below 2^64 - 1 (mix64, dmrt/runtime/hash.h, is a bijection
// with mix64(0) == 0).
enum class KeyOrder { kHashed, kOrdered };

constexpr Key record_key(uint64_t record, KeyOrder order) {
  return order == KeyOrder::kHashed ? mix64(record + 1) : record + 1;
}

// ---- key sets (--keyset)
// ----------------------------------------------------------------------------

// Which keys the records stand for. `ycsb` is record_key() above. The others are the learned-index
// key sets of bench/workload/keysets.h (uniform, normal, lognormal, sequential-with-gaps): a table
// of distinct keys drawn once per run, large enough for the loaded records and every insert the run
// can make. Record r is table[r]: with --key-order hashed the table is shuffled, so the load phase
// inserts a random sample of the set and run-phase inserts land all over it; with ordered it is
// ascending, so inserts append at the right end. Any index can run on any key set.
inline constexpr std::string_view kKeySets[] = {"ycsb", "uniform", "normal", "lognormal",
                                                "seqgaps"};

class KeyMap {
 public:
  explicit KeyMap(KeyOrder order = KeyOrder::kHashed) : order_(order) {}

  // `set` is a name of kKeySets; a table of `records` keys (none for "ycsb").
  KeyMap(std::string_view set, uint64_t records, uint64_t seed, KeyOrder order) : order_(order) {
    if (set == "ycsb") return;
    auto t = std::make_shared<std::vector<Key>>(
        make_keyset(parse_key_dist(set), static_cast<size_t>(records), seed));
    max_key_ = t->empty() ? 0 : t->back();
    if (order == KeyOrder::kHashed) {  // Fisher-Yates, deterministic in the seed
      Rng rng(seed ^ 0x6b657973657473ull);
      for (size_t i = t->size(); i > 1; --i) std::swap((*t)[i - 1], (*t)[rng.below(i)]);
    }
    table_ = std::move(t);
  }

  Key operator()(uint64_t record) const {
    if (!table_) return record_key(record, order_);
    if (record >= table_->size())
      throw LimitError("the key set has " + std::to_string(table_->size()) +
                       " keys and the run needs record " + std::to_string(record) +
                       " (a --seconds run inserted more than expected; use --ops)");
    return (*table_)[record];
  }
  bool tabled() const { return table_ != nullptr; }
  uint64_t size() const { return table_ ? table_->size() : 0; }
  Key max_key() const { return max_key_; }  // largest key of the table (0 for ycsb)

 private:
  KeyOrder order_;
  std::shared_ptr<const std::vector<Key>> table_;
  Key max_key_ = 0;
};

// ---- acknowledged insert counter
// ------------------------------------------------------------------

// Run-phase inserts take record numbers from `next()` (shared by all clients); readers may only
// choose records below `limit()`, the end of the longest prefix of acknowledged inserts, so no
// read goes to a record whose insert has not completed (YCSB's AcknowledgedCounterGenerator).
class InsertSequence {
 public:
  explicit InsertSequence(uint64_t start) : next_(start), limit_(start) {}
  uint64_t next() { return next_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t limit() const { return limit_.load(std::memory_order_acquire); }
  uint64_t issued() const { return next_.load(std::memory_order_relaxed); }
  // Called when the insert of `record` completed (successfully or not).
  void acknowledge(uint64_t record) {
    std::lock_guard g(mu_);
    uint64_t lim = limit_.load(std::memory_order_relaxed);
    if (record != lim) {
      pending_.push_back(record);
      return;
    }
    ++lim;
    // Pending is small (bounded by the number of clients): a linear sweep is fine.
    bool moved = true;
    while (moved) {
      moved = false;
      for (size_t i = 0; i < pending_.size(); ++i)
        if (pending_[i] == lim) {
          pending_[i] = pending_.back();
          pending_.pop_back();
          ++lim;
          moved = true;
          break;
        }
    }
    limit_.store(lim, std::memory_order_release);
  }

 private:
  std::atomic<uint64_t> next_;
  std::atomic<uint64_t> limit_;
  std::mutex mu_;
  std::vector<uint64_t> pending_;
};

// ---- key choosers
// --------------------------------------------------------------------------------

enum class Distribution { kZipfian, kUniform, kLatest };

// Shared, read-only description from which each worker builds its own chooser.
struct ChooserSpec {
  Distribution dist = Distribution::kZipfian;
  double theta = 0.99;
  uint64_t loaded = 0;      // records present after the load phase
  uint64_t zipf_items = 0;  // scrambled zipfian: item count (loaded + expected inserts)
  double zipf_zetan = 0;    // zeta(zipf_items), precomputed once
  double latest_zetan = 0;  // zeta(loaded), the starting point of skewed-latest
};

// The spec of a run over `loaded` records that expects `inserts` more, zeta computed once.
inline ChooserSpec make_chooser_spec(Distribution dist, double theta, uint64_t loaded,
                                     uint64_t inserts) {
  ChooserSpec spec;
  spec.dist = dist;
  spec.theta = theta;
  spec.loaded = loaded;
  spec.zipf_items = loaded + inserts;
  if (dist == Distribution::kZipfian)
    spec.zipf_zetan = zeta_extend(0, spec.zipf_items, spec.theta, 0.0);
  if (dist == Distribution::kLatest) spec.latest_zetan = zeta_extend(0, loaded, spec.theta, 0.0);
  return spec;
}

// Chooses existing record numbers, never at or beyond the acknowledged insert limit.
//   zipfian : YCSB's ScrambledZipfianGenerator: rank from zipfian(items), record =
//             fnv1a64(rank) mod items, retried while >= the acknowledged limit.
//   uniform : uniform over [0, limit).
//   latest  : YCSB's SkewedLatestGenerator: record = limit - 1 - zipfian(limit); the zipfian's
//             item count follows the limit, extending zeta incrementally.
class KeyChooser {
 public:
  explicit KeyChooser(const ChooserSpec& s)
      : spec_(s),
        zipf_(s.dist == Distribution::kZipfian ? s.zipf_items : s.loaded, s.theta,
              s.dist == Distribution::kZipfian ? s.zipf_zetan : s.latest_zetan) {}

  uint64_t next(Rng& rng, uint64_t limit) {
    if (limit == 0) return 0;
    switch (spec_.dist) {
      case Distribution::kUniform:
        return rng.below(limit);
      case Distribution::kLatest: {
        zipf_.grow_to(limit);
        uint64_t back = zipf_.next(rng);
        return back < limit ? limit - 1 - back : 0;
      }
      case Distribution::kZipfian: {
        uint64_t n = zipf_.items();
        for (int tries = 0; tries < 64; ++tries) {
          uint64_t r = fnv1a64(zipf_.next(rng)) % n;
          if (r < limit) return r;
        }
        return rng.below(limit);  // limit far below items (tiny run): fall back to uniform
      }
    }
    return 0;
  }

 private:
  ChooserSpec spec_;
  Zipfian zipf_;
};

// ---- workload mixes
// ------------------------------------------------------------------------------

struct Mix {
  char name = 'c';
  double search = 0, update = 0, insert = 0, scan = 0, rmw = 0;  // fractions summing to 1
  bool load_only = false;
  bool forces_latest = false;  // D: reads follow the latest distribution
  uint32_t max_scan = 100;     // E: scan length uniform in 1..max_scan
};

// YCSB core workloads A-F and LOAD (the load phase alone), and the single-operation
// micro-benchmarks the papers plot beside them (DMTree Fig. 11-12, CHIME Fig. 15): update and
// scan of loaded keys, and insert of new keys into the loaded index (not the load phase, which
// inserts into an empty one).
inline std::optional<Mix> mix_of(std::string_view w) {
  Mix m;
  if (w == "load") {
    m.name = 'L';
    m.load_only = true;
    m.insert = 1;
    return m;
  }
  if (w == "update" || w == "insert" || w == "scan") {
    m.name = static_cast<char>(w[0] - 'a' + 'A');
    (w == "update" ? m.update : w == "insert" ? m.insert : m.scan) = 1;
    return m;
  }
  if (w.size() != 1) return std::nullopt;
  m.name = w[0];
  switch (w[0]) {
    case 'a':
      m.search = 0.5;
      m.update = 0.5;
      break;
    case 'b':
      m.search = 0.95;
      m.update = 0.05;
      break;
    case 'c':
      m.search = 1.0;
      break;
    case 'd':
      m.search = 0.95;
      m.insert = 0.05;
      m.forces_latest = true;
      break;
    case 'e':
      m.scan = 0.95;
      m.insert = 0.05;
      break;
    case 'f':
      m.search = 0.5;
      m.rmw = 0.5;
      break;
    default:
      return std::nullopt;
  }
  return m;
}

inline OpKind pick_op(const Mix& m, Rng& rng) {
  double u = rng.unit();
  if ((u -= m.search) < 0) return OpKind::kSearch;
  if ((u -= m.update) < 0) return OpKind::kUpdate;
  if ((u -= m.insert) < 0) return OpKind::kInsert;
  if ((u -= m.scan) < 0) return OpKind::kScan;
  if (m.rmw > 0) return OpKind::kRmw;
  // Rounding at the top end: the last kind with a nonzero share.
  if (m.scan > 0) return OpKind::kScan;
  if (m.insert > 0) return OpKind::kInsert;
  if (m.update > 0) return OpKind::kUpdate;
  return OpKind::kSearch;
}

// A value of `size` bytes: a stamp unique to this write up front, then the key, then a filler
// pattern. The stamp comes first so that even 8-byte values differ between any two writes (a
// linearizability check needs every written value distinct; the key alone would make all writes
// of one key look the same). Callers build stamps with value_stamp().
inline void make_value(std::string& out, size_t size, Key key, uint64_t stamp) {
  out.resize(size);
  uint64_t words[2] = {stamp, key};
  size_t head = size < sizeof(words) ? size : sizeof(words);
  std::memcpy(out.data(), words, head);
  for (size_t i = head; i < size; ++i) out[i] = static_cast<char>('a' + (i + stamp) % 26);
}

// Writer-unique, never zero: client number (up to 2^24 clients) above a per-client sequence
// number (up to 2^40 writes each).
constexpr uint64_t value_stamp(uint32_t client, uint64_t seq) {
  return (uint64_t{client + 1} << 40) | (seq & ((uint64_t{1} << 40) - 1));
}

}  // namespace dmrt::bench
