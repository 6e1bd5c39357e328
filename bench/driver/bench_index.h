// The driver's view of an index: a handle and an index behind virtual calls, so that dmrt-bench's
// driver (bench/driver/runner.h) is compiled once per transport (run_TRANSPORT.cpp, generated from
// bench/transports/run.cpp.in) and each index once (bench/indexes/NAME.cpp), not every index inside
// every driver. A virtual call per operation costs a few nanoseconds against the microseconds of a
// round trip, and the local peers pay it too, so the comparison stays even.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/indexes/adapter.h"
#include "bench/indexes/spec.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/transport.h"

namespace dmrt::bench {

// One client's handle (KvHandle; scan only when the index serves scans). The byte-key calls
// (BytesKvHandle, dmrt/runtime/kv.h) serve --key-size > 8, only on an index that takes byte keys.
class BenchHandle {
 public:
  virtual ~BenchHandle() = default;
  virtual bool search(Key, std::string& out) = 0;
  virtual bool insert(Key, std::string_view value) = 0;
  virtual bool update(Key, std::string_view value) = 0;
  virtual bool remove(Key) = 0;
  virtual void scan(Key from, size_t count, std::vector<std::pair<Key, std::string>>& rows) = 0;
  virtual bool search(std::string_view key, std::string& out) = 0;
  virtual bool insert(std::string_view key, std::string_view value) = 0;
  virtual bool update(std::string_view key, std::string_view value) = 0;
  virtual bool remove(std::string_view key) = 0;
  virtual void scan(std::string_view from, size_t count,
                    std::vector<std::pair<std::string, std::string>>& rows) = 0;
  // Compute-side cache this handle holds (summed over handles).
  virtual uint64_t cache_bytes() = 0;
};

// The object every client shares.
template <Transport T>
class BenchIndex {
 public:
  virtual ~BenchIndex() = default;
  virtual std::unique_ptr<BenchHandle> handle(Client<T>&) = 0;
  // After each phase, on the setup client (its traffic is not counted).
  virtual IndexStats stats(Client<T>&) = 0;
  // A cache shared by the clients of a compute node, counted once.
  virtual uint64_t shared_cache_bytes() = 0;
};

// What the driver is told of the chosen index: its traits, the options it will run with, and how
// to create it.
template <Transport T>
class IndexMaker {
 public:
  virtual ~IndexMaker() = default;
  virtual std::string_view name() const = 0;
  virtual bool local() const = 0;  // a single-machine peer: no verbs at all
  virtual bool scan() const = 0;
  virtual bool byte_keys() const = 0;  // its handle takes byte-string keys (BenchHandle's)
  virtual bool caches() const = 0;     // it has a compute-side cache that --cache-mb sizes
  // "index_options" of the results (an empty object when the index has none).
  virtual nlohmann::json describe(const IndexOptions&) const = 0;
  virtual std::unique_ptr<BenchIndex<T>> create(Client<T>& setup, const IndexOptions&) const = 0;
  // Joins the index another process created with the same options (dmrt-bench --attach; the
  // Index concept's attach). A local peer lives in one process and refuses (ConfigError).
  virtual std::unique_ptr<BenchIndex<T>> attach(Client<T>& setup, const IndexOptions&) const = 0;
  // The index bulk loads the load phase's keys at create() (IndexOptions::bulk_load) instead of
  // taking them as inserts.
  virtual bool bulk_loads(const IndexOptions&) const { return false; }
};

// Runs the request's phases on transport T; returns the exit code. Defined in bench/driver/runner.h
// and instantiated once per transport (run_TRANSPORT.cpp, generated from
// bench/transports/run.cpp.in).
template <Transport T>
int run_bench(const RunRequest&, const IndexMaker<T>&);

}  // namespace dmrt::bench
