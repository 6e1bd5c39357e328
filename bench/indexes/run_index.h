// The run side of one index (included by bench/indexes/NAME.cpp only): the index's adapter behind
// the driver's virtual interface (bench/driver/bench_index.h), on every transport compiled in. The
// driver itself is compiled once per transport elsewhere, so an index's translation unit holds
// only the index.
//
// The contract of a dmrt-bench index adapter (the concepts below), what bench/driver/runner.h
// drives.
//
// An adapter is a struct template over the transport with (its name, summary and flags are its
// registration's, bench/indexes/register.h):
//   static constexpr bool kLocal                true for single-machine peers (no verbs at all)
//   using Index = ...;                          the object shared by every client
//   using Handle = ...;                         per-client handle: a KvHandle (scans: RangeHandle)
//   static std::shared_ptr<Index> create(Client<T>& setup, const IndexOptions&);
//   static Handle handle(Index&, Client<T>&);
//   static IndexStats stats(Index&, Client<T>&);   after each phase (its traffic is not counted)
//   static uint64_t cache_bytes(Index&, Handle&);  compute-side cache of one handle (summed)
// Optional:
//   using Flags = ...;                          its parsed --<name>-* flags (a FlagResolver,
//                                               bench/indexes/spec.h); create() then takes
//                                               (setup, IndexOptions, Flags)
//   static nlohmann::json describe(const IndexOptions&[, const Flags&]);
//                                               the options the index runs with -> "index_options"
//   static uint64_t shared_cache_bytes(Index&); a cache shared by clients (per compute node),
//                                               added once to the handles' sum
// Whether an index supports scans (workload E) is whether its Handle models RangeHandle.
// The disaggregated-memory indexes share one adapter, DmAdapter (bench/indexes/dm_adapter.h); the
// local peers have their own (LocalPeer, below, over bench/peers/*.h).
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/cli/options.h"
#include "bench/driver/bench_index.h"
#include "bench/driver/phases.h"
#include "bench/driver/usage.h"
#include "bench/indexes/adapter.h"
#include "bench/indexes/dm_adapter.h"
#include "bench/indexes/spec.h"
#include "bench/workload/workload.h"
#include "dmrt/policies/transports.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/transport.h"
#include "dmrt/runtime/transport_list.h"

namespace dmrt::bench {

// create() with the adapter's flags when it declares them, else with the IndexOptions alone.
template <class A, class T>
concept CreatesWithFlags = requires(Client<T>& c, const IndexOptions& o, const FlagsOf<A>& f) {
  { A::create(c, o, f) } -> std::same_as<std::shared_ptr<typename A::Index>>;
};
template <class A, class T>
concept CreatesPlain = requires(Client<T>& c, const IndexOptions& o) {
  { A::create(c, o) } -> std::same_as<std::shared_ptr<typename A::Index>>;
};

template <class A, class T>
concept AdapterMembers = requires(Client<T>& c, typename A::Index& idx, typename A::Handle& h) {
  { A::kLocal } -> std::convertible_to<bool>;
  { A::handle(idx, c) } -> std::same_as<typename A::Handle>;
  { A::stats(idx, c) } -> std::same_as<IndexStats>;
  { A::cache_bytes(idx, h) } -> std::convertible_to<uint64_t>;
};

template <class A, class T>
concept IndexAdapter = Transport<T> && KvHandle<typename A::Handle> && AdapterMembers<A, T> &&
    (CreatesWithFlags<A, T> || CreatesPlain<A, T>);

template <class A>
inline constexpr bool kSupportsScan = RangeHandle<typename A::Handle>;

namespace detail {

template <class A>
class ErasedHandle final : public BenchHandle {
  static constexpr bool kBytes = BytesKvHandle<typename A::Handle>;
  [[noreturn]] static void no_byte_keys() {
    throw ConfigError("this index takes 8-byte integer keys only");  // the driver checks first
  }

 public:
  ErasedHandle(typename A::Index& idx, typename A::Handle h) : idx_(idx), h_(std::move(h)) {}
  bool search(Key k, std::string& out) override { return h_.search(k, out); }
  bool insert(Key k, std::string_view v) override { return h_.insert(k, v); }
  bool update(Key k, std::string_view v) override { return h_.update(k, v); }
  bool remove(Key k) override { return h_.remove(k); }
  void scan(Key from, size_t count, std::vector<std::pair<Key, std::string>>& rows) override {
    if constexpr (kSupportsScan<A>)
      h_.scan(from, count, rows);
    else
      throw ConfigError("this index does not support scans");  // the driver checks first
  }
  bool search(std::string_view k, std::string& out) override {
    if constexpr (kBytes) return h_.search(k, out);
    no_byte_keys();
  }
  bool insert(std::string_view k, std::string_view v) override {
    if constexpr (kBytes) return h_.insert(k, v);
    no_byte_keys();
  }
  bool update(std::string_view k, std::string_view v) override {
    if constexpr (kBytes) return h_.update(k, v);
    no_byte_keys();
  }
  bool remove(std::string_view k) override {
    if constexpr (kBytes) return h_.remove(k);
    no_byte_keys();
  }
  void scan(std::string_view from, size_t count,
            std::vector<std::pair<std::string, std::string>>& rows) override {
    if constexpr (BytesRangeHandle<typename A::Handle>)
      h_.scan(from, count, rows);
    else if constexpr (kBytes)
      throw ConfigError("this index does not support scans");  // the driver checks first
    else
      no_byte_keys();
  }
  uint64_t cache_bytes() override { return A::cache_bytes(idx_, h_); }

 private:
  typename A::Index& idx_;
  typename A::Handle h_;
};

template <Transport T, class A>
class ErasedIndex final : public BenchIndex<T> {
 public:
  explicit ErasedIndex(std::shared_ptr<typename A::Index> idx) : idx_(std::move(idx)) {}
  std::unique_ptr<BenchHandle> handle(Client<T>& c) override {
    return std::make_unique<ErasedHandle<A>>(*idx_, A::handle(*idx_, c));
  }
  IndexStats stats(Client<T>& c) override { return A::stats(*idx_, c); }
  uint64_t shared_cache_bytes() override {
    if constexpr (requires { A::shared_cache_bytes(*idx_); })
      return A::shared_cache_bytes(*idx_);
    else
      return 0;
  }

 private:
  std::shared_ptr<typename A::Index> idx_;
};

template <Transport T, class A>
class ErasedMaker final : public IndexMaker<T> {
 public:
  ErasedMaker(std::string_view name, const FlagsOf<A>& flags) : name_(name), flags_(flags) {}
  std::string_view name() const override { return name_; }
  bool local() const override { return A::kLocal; }
  bool scan() const override { return kSupportsScan<A>; }
  bool byte_keys() const override { return BytesKvHandle<typename A::Handle>; }
  bool caches() const override {
    if constexpr (requires { typename A::Opts; })  // the index's own options (DmAdapter)
      return requires(typename A::Opts o) {
        o.cache_bytes;
      };
    else
      return false;
  }
  nlohmann::json describe(const IndexOptions& io) const override {
    if constexpr (requires { A::describe(io, flags_); })
      return A::describe(io, flags_);
    else if constexpr (requires { A::describe(io); })
      return A::describe(io);
    else
      return nlohmann::json::object();
  }
  bool bulk_loads(const IndexOptions& io) const override {
    if constexpr (requires { A::bulk_loads(io, flags_); })
      return A::bulk_loads(io, flags_);
    else
      return false;
  }
  std::unique_ptr<BenchIndex<T>> create(Client<T>& setup, const IndexOptions& io) const override {
    if constexpr (CreatesWithFlags<A, T>)
      return std::make_unique<ErasedIndex<T, A>>(A::create(setup, io, flags_));
    else
      return std::make_unique<ErasedIndex<T, A>>(A::create(setup, io));
  }
  std::unique_ptr<BenchIndex<T>> attach(Client<T>& setup, const IndexOptions& io) const override {
    if constexpr (requires { A::attach(setup, io, flags_); })
      return std::make_unique<ErasedIndex<T, A>>(A::attach(setup, io, flags_));
    else
      throw ConfigError("index " + std::string(name_) +
                        " lives in one process's memory: processes cannot share it (--attach)");
  }

 private:
  std::string_view name_;
  const FlagsOf<A>& flags_;  // main.cpp's, alive for the whole run
};

}  // namespace detail

// Runs adapter A on transport T.
template <Transport T, class A>
int run_adapter(const RunRequest& r, const FlagsOf<A>& flags) {
  static_assert(IndexAdapter<A, T>, "an index adapter does not satisfy IndexAdapter");
  const std::string name(r.index);
  if constexpr (A::kLocal && virtual_time<T>) {
    // A local peer runs no verbs, so a virtual-time transport has nothing to charge: its clock
    // never moves, every phase lasts 0 s, and --verify would see every operation as concurrent
    // with every other.
    return usage_error("index " + name +
                       " is a local peer (no verbs): the simulator has nothing to time; run it on "
                       "--transport shm");
  } else {
    if (r.opt.byte_keys() && !BytesKvHandle<typename A::Handle>)
      throw ConfigError("index " + name + " takes 8-byte integer keys only (--key-size " +
                        std::to_string(r.opt.key_size) +
                        " needs an index marked [bytes] in --help: its handle takes byte-string "
                        "keys)");
    if (r.opt.byte_keys() && !scanning_workload(r.opt, r.mix).empty() &&
        !BytesRangeHandle<typename A::Handle>)
      return usage_error("index " + name +
                         " does not support scans over byte-string keys (workload " +
                         scanning_workload(r.opt, r.mix) + ")");
    const std::string scans = scanning_workload(r.opt, r.mix);  // --then's phases too
    if (!scans.empty() && !kSupportsScan<A>)
      return usage_error("index " + name + " does not support scans (workload " + scans +
                         "); use a range index");
    return run_bench<T>(r, detail::ErasedMaker<T, A>(r.index, flags));
  }
}

// Runs the adapter `Of::type<T>` on the transport T the request names, one of the build's
// (dmrt/policies/transports.h).
template <class Of, class Flags>
int run_transports(const RunRequest& r, const Flags& flags) {
  int rc = -1;
  bool found = false;
  for_each_transport(Transports{}, [&]<Transport T>() {
    if (found || T::kName != r.transport) return;
    found = true;
    rc = run_adapter<T, typename Of::template type<T>>(r, flags);
  });
  return found ? rc
               : usage_error("transport " + std::string(r.transport) +
                             " is not compiled into this dmrt-bench");
}

// The adapter of a local peer (an index in this process's memory: no verbs, no transport state)
// in the form run_transports() takes. I is built from the run's IndexOptions and reports its
// index_stats (`explicit I(const IndexOptions&)`, `IndexStats stats() const`); a handle is
// `H(I&)`, with no per-client cache.
template <class I, class H>
struct LocalPeer {
  template <Transport T>
  struct type {
    static constexpr bool kLocal = true;
    using Index = I;
    using Handle = H;
    static std::shared_ptr<Index> create(Client<T>&, const IndexOptions& o) {
      return std::make_shared<Index>(o);
    }
    static Handle handle(Index& idx, Client<T>&) { return Handle(idx); }
    static IndexStats stats(Index& idx, Client<T>&) { return idx.stats(); }
    static uint64_t cache_bytes(Index&, Handle&) { return 0; }
  };
};

}  // namespace dmrt::bench
