// What every dmrt-bench index sees from the bench: IndexOptions (its sizing), and the flags type
// an adapter declares (FlagsOf). Nothing here parses a command line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "dmrt/runtime/kv.h"

namespace dmrt::bench {

// The load phase's records, for an index that bulk loads them when it is created (an adapter's
// bulk_loads(); bench/driver/runner.h) instead of taking them as inserts.
struct BulkLoad {
  std::span<const Key> keys;                 // ascending, distinct
  std::function<std::string(Key)> value_of;  // the value the load gives each key
};

// What every index is told; each adapter maps the fields its index understands.
struct IndexOptions {
  size_t value_size = 8;  // bytes per value (--value-size)
  // The longest key in bytes (--key-size): 8 keeps integer keys; more, the index takes byte-string
  // keys of up to key_size bytes (dmrt/runtime/key_bytes.h) through its BytesKvHandle calls.
  uint32_t key_size = 8;
  uint64_t cache_bytes = 0;  // compute-side cache budget per compute node (--cache-mb); 0 = default
  uint64_t expected_keys = 0;  // records the run will hold at most (loaded + expected inserts)
  uint64_t key_space = 0;      // keys fall in [1, key_space]; 0 = the whole 64-bit space
  unsigned clients = 1;        // threads x fibers
  unsigned compute_nodes = 1;  // clients are homed round-robin over these
  uint64_t seed = 1;
  // --on-peer-loss continue: lock words name their holder's process even where that costs
  // (CHIME's vacancy bits, Options::lock_holders), so that a dead holder's locks can be taken.
  bool lock_holders = false;
  const BulkLoad* bulk_load = nullptr;  // create() loads these (only when the adapter bulk loads)
};

// The flags of an adapter that has none.
struct NoFlags {};

// An adapter's flags: its `Flags` type when it declares one (create() and describe() then take
// them), else NoFlags.
template <class A>
struct FlagsOfImpl {
  using type = NoFlags;
};
template <class A>
requires requires {
  typename A::Flags;
}
struct FlagsOfImpl<A> {
  using type = typename A::Flags;
};
template <class A>
using FlagsOf = typename FlagsOfImpl<A>::type;

// A MiB figure as bytes (flags take MiB, the indexes take bytes).
inline uint64_t mib_to_bytes(double mib) {
  return static_cast<uint64_t>(mib * 1024.0 * 1024.0);
}

}  // namespace dmrt::bench
