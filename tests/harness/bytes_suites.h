// Generic test suites for any index whose handle takes byte-string keys (BytesKvHandle,
// dmrt/runtime/kv.h; the key rules are dmrt/runtime/key_bytes.h's), against a reference model over
// std::string keys. Scans are checked when the handle models BytesRangeHandle.
//
//   byte_key_suites(make_handle, key_size, BytesSuiteOptions)
//       make_handle() -> a handle (or pointer-like to one, e.g. keep(index, handle) below) for ONE
//       client on a NEW, EMPTY index built with `key_size`; it is called once per part:
//         edge cases : keys of every length 1..key_size (or 8-byte keys only at key_size 8), keys
//                      that are prefixes of each other, keys sharing long prefixes
//                      ("user000...0001" / "user000...0002"), 0x00 and 0xff bytes, a key longer
//                      than key_size and the empty key rejected with LimitError, scans from keys
//                      that are not present;
//         differential : random operations over a pool of such keys (opts.ops of them), compared
//                      exactly with std::map<std::string, std::string> after every call, then a
//                      sweep of every key of the pool.
//   byte_key_stress_test(pool, make_handle, key_size, StressOptions)
//       make_handle(ShmClient&) -> a handle for that client on ONE shared index. T threads x F
//       fibers on shm, zipfian over a sorted pool of byte keys; the history records each key's
//       rank in the pool (the rank keeps the keys' order, so scans check as integer scans) and
//       must be linearizable. A scan row whose key is not in the pool fails the test.
//
// How an index instantiates them: one line each inside a TEST, once its Options have key_size and
// its handle models BytesKvHandle (BytesRangeHandle for scans). `c` is a client: on shm
// `auto pool = testing::small_pool(1, 1, uint64_t{256} << 20); auto c = testing::make_client(pool,
// 0);` (tests/runtime/test_cluster.h); on sim `sim::Cluster cluster{sim::small_test_cluster(1,
// 1)}; sim::SimClient c = sim::untimed_setup_client(cluster);` (tests/sim/small_cluster.h).
// The tree indexes store values inline in value_size slots: min_value = max_value = value_size.
//   RACE, shm:
//     byte_key_suites([&] { race::Options o; o.value_size = 128; o.key_size = 32; auto i =
//       race::RaceIndex<ShmTransport>::create(c, o); return keep(i, i->handle(c)); }, 32, {});
//   RACE, sim: the same with race::RaceIndex<SimTransport> and the sim client.
//   SMART, shm:
//     byte_key_suites([&] { smart::Options o; o.value_size = 32; o.key_size = 32; auto t =
//       smart::Tree<ShmTransport>::create(c, o); return keep(t, t->handle(c)); }, 32,
//       {.min_value = 32, .max_value = 32});
//   SMART, sim: smart::Tree<SimTransport>, the sim client.
//   Sherman, shm:
//     byte_key_suites([&] { sherman::Options o; o.value_size = 32; o.leaf_span = 8;
//       o.internal_span = 6; o.key_size = 32; auto t = sherman::Tree<ShmTransport>::create(c, o);
//       return keep(t, t->handle(c)); }, 32, {.min_value = 32, .max_value = 32});
//   Sherman, sim: sherman::Tree<SimTransport>, the sim client.
//   Stress (shm; one shared index, a handle per client, as stress_test in kv_suites.h):
//     auto setup = testing::make_client(pool, 1000); auto t = ...::create(setup, o);
//     byte_key_stress_test(pool, [&](ShmClient& c) { return t->handle(c); }, 32, so);
//     with StressOptions so (so.keys = 256; so.value_bytes = value_size for the trees).
// Repeat with key_size 256, and with 8 (the bytes overloads then take 8-byte keys only: the suites
// draw 8-byte keys, without 2^64 - 1, which some integer indexes keep as a sentinel).
// tests/harness/bytes_suites_test.cpp instantiates them for the reference index (shm and sim),
// tests/harness/bytes_stress_test.cpp the stress.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/workload/zipfian.h"
#include "dmrt/check/history.h"
#include "dmrt/check/linearizability.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"
#include "tests/harness/byte_keys.h"
#include "tests/harness/kv_suites.h"

namespace dmrt::harness {

// An index and one handle on it, kept together so that make_handle() may build a fresh index.
template <class I, class H>
struct Kept {
  std::shared_ptr<I> index;
  H handle;
  H& operator*() { return handle; }
};
template <class I, class H>
Kept<I, H> keep(std::shared_ptr<I> index, H handle) {
  return Kept<I, H>{std::move(index), std::move(handle)};
}

// A handle, or a pointer-like to one (by its byte-key calls).
template <class H>
decltype(auto) deref_bytes(H& h) {
  if constexpr (requires { h.remove(std::string_view{}); })
    return (h);
  else
    return (*h);
}

struct BytesSuiteOptions {
  size_t ops = 20000;  // differential operations
  size_t pool_keys = 600;
  size_t min_value = 1, max_value = 100;
  size_t max_scan = 24;
  uint64_t seed = 1;
};

namespace detail {

// One handle and the reference model, every call compared.
template <class H>
class BytesModelCheck {
 public:
  explicit BytesModelCheck(H& h) : h_(h) {}
  void search(std::string_view k) {
    out_ = "garbage";
    const bool found = h_.search(k, out_);
    auto it = model_.find(k);
    ASSERT_EQ(found, it != model_.end()) << "search " << show_key(k);
    if (found) {
      ASSERT_EQ(out_, it->second) << "search " << show_key(k);
    }
  }
  void insert(std::string_view k, std::string_view v) {
    const bool expect = model_.find(k) == model_.end();
    ASSERT_EQ(h_.insert(k, v), expect) << "insert " << show_key(k);
    if (expect) model_.emplace(std::string(k), std::string(v));
  }
  void update(std::string_view k, std::string_view v) {
    auto it = model_.find(k);
    ASSERT_EQ(h_.update(k, v), it != model_.end()) << "update " << show_key(k);
    if (it != model_.end()) it->second.assign(v);
  }
  void remove(std::string_view k) {
    auto it = model_.find(k);
    ASSERT_EQ(h_.remove(k), it != model_.end()) << "remove " << show_key(k);
    if (it != model_.end()) model_.erase(it);
  }
  void scan(std::string_view from, size_t count) {
    if constexpr (BytesRangeHandle<H>) {
      h_.scan(from, count, rows_);
      std::vector<std::pair<std::string, std::string>> expect;
      for (auto it = model_.lower_bound(from); it != model_.end() && expect.size() < count; ++it)
        expect.emplace_back(it->first, it->second);
      ASSERT_EQ(rows_.size(), expect.size())
          << "scan from " << show_key(from) << " count " << count;
      for (size_t i = 0; i < rows_.size(); ++i) {
        ASSERT_EQ(rows_[i].first, expect[i].first)
            << "scan from " << show_key(from) << " row " << i << ": " << show_key(rows_[i].first)
            << " instead of " << show_key(expect[i].first);
        ASSERT_EQ(rows_[i].second, expect[i].second) << "scan row " << i;
      }
    }
  }
  // Every key of `keys` agrees with the model.
  void sweep(const std::vector<std::string>& keys) {
    for (const std::string& k : keys) {
      ASSERT_NO_FATAL_FAILURE(search(k));
    }
  }
  const std::map<std::string, std::string, std::less<>>& model() const { return model_; }

 private:
  H& h_;
  std::map<std::string, std::string, std::less<>> model_;
  std::string out_;
  std::vector<std::pair<std::string, std::string>> rows_;
};

inline std::string value_for(uint64_t i, size_t len) {
  return make_value(0, i, len);
}

}  // namespace detail

// The edge cases (see the top of this file).
template <class MakeHandle>
void byte_key_edge_cases(MakeHandle&& make_handle, size_t key_size, const BytesSuiteOptions& o) {
  auto holder = make_handle();
  auto& h = deref_bytes(holder);
  using H = std::remove_reference_t<decltype(h)>;
  static_assert(BytesKvHandle<H>, "byte_key_suites needs a BytesKvHandle");
  detail::BytesModelCheck<H> m(h);
  const size_t vlen = o.max_value;
  const bool eight = key_size == kIntegerKeyBytes;
  uint64_t n = 0;

  // Every length (at key_size 8: 8-byte keys only), as prefixes of one another: inserting the
  // longer ones must not disturb the shorter ones, and removing one leaves its neighbours.
  std::vector<std::string> chain;
  std::string root(key_size, '\0');
  for (size_t i = 0; i < key_size; ++i) root[i] = static_cast<char>('a' + i % 26);
  for (size_t len = eight ? 8 : 1; len <= key_size; ++len) chain.push_back(root.substr(0, len));
  for (const auto& k : chain) ASSERT_NO_FATAL_FAILURE(m.insert(k, detail::value_for(++n, vlen)));
  for (const auto& k : chain) ASSERT_NO_FATAL_FAILURE(m.search(k));
  if (!eight) {
    ASSERT_NO_FATAL_FAILURE(m.remove(chain[1]));
    ASSERT_NO_FATAL_FAILURE(m.search(chain[0]));
    ASSERT_NO_FATAL_FAILURE(m.search(chain[1]));
    ASSERT_NO_FATAL_FAILURE(m.search(chain[2]));
    ASSERT_NO_FATAL_FAILURE(m.update(chain[0], detail::value_for(++n, vlen)));
    ASSERT_NO_FATAL_FAILURE(m.search(chain[2]));
    ASSERT_NO_FATAL_FAILURE(m.insert(chain[1], detail::value_for(++n, vlen)));
  }
  // Long shared prefixes, the keys differing only in their last byte.
  std::vector<std::string> shared;
  for (int i = 0; i < 12; ++i) {
    std::string k(key_size, '0');
    std::copy_n("user", std::min<size_t>(4, key_size), k.begin());
    k.back() = static_cast<char>('0' + i);
    if (i >= 10) k.back() = static_cast<char>(i == 10 ? '\x00' : '\xff');
    shared.push_back(k);
    ASSERT_NO_FATAL_FAILURE(m.insert(k, detail::value_for(++n, vlen)));
  }
  for (const auto& k : shared) ASSERT_NO_FATAL_FAILURE(m.search(k));
  ASSERT_NO_FATAL_FAILURE(m.update(shared[5], detail::value_for(++n, vlen)));
  ASSERT_NO_FATAL_FAILURE(m.remove(shared[6]));
  ASSERT_NO_FATAL_FAILURE(m.search(shared[6]));
  ASSERT_NO_FATAL_FAILURE(m.search(shared[7]));
  // 0x00 and 0xff bytes, at both ends of the order.
  std::vector<std::string> extremes;
  for (size_t len : {size_t{1}, size_t{2}, key_size - 1, key_size}) {
    if (eight && len != 8) continue;
    extremes.push_back(std::string(len, '\x00'));
    if (!eight) extremes.push_back(std::string(len, '\xff'));  // at 8: 2^64 - 1, a sentinel
    std::string mid(len, '\xff');
    mid[0] = '\x00';
    extremes.push_back(mid);
  }
  for (const auto& k : extremes) ASSERT_NO_FATAL_FAILURE(m.insert(k, detail::value_for(++n, vlen)));
  for (const auto& k : extremes) ASSERT_NO_FATAL_FAILURE(m.search(k));
  // Absent keys: never inserted, or a present key plus or minus one byte.
  std::string near = chain.back();
  near.back() = '\x01';  // differs from the longest chain key in its last byte only
  for (std::string k : {std::string("zz"), near, std::string(key_size, 'q')}) {
    if (eight) k.resize(8, 'q');
    ASSERT_NO_FATAL_FAILURE(m.search(k));
    ASSERT_NO_FATAL_FAILURE(m.update(k, detail::value_for(++n, vlen)));
    ASSERT_NO_FATAL_FAILURE(m.remove(k));
  }
  // Over-long and empty keys are refused (LimitError), and change nothing.
  const std::string too_long(key_size + 1, 'a'), empty;
  std::string out;
  for (const std::string* k : {&too_long, &empty}) {
    EXPECT_THROW(h.insert(*k, "v"), LimitError) << show_key(*k);
    EXPECT_THROW(h.search(*k, out), LimitError) << show_key(*k);
    EXPECT_THROW(h.update(*k, "v"), LimitError) << show_key(*k);
    EXPECT_THROW(h.remove(*k), LimitError) << show_key(*k);
  }
  if (eight) {
    EXPECT_THROW(h.insert(std::string_view("abc"), "v"), LimitError) << "3 bytes at key_size 8";
  }
  // Scans from every key present and from keys that are not: between neighbours, before the
  // first and after the last.
  if constexpr (BytesRangeHandle<H>) {
    std::vector<std::string> froms;
    for (const auto& [k, v] : m.model()) {
      froms.push_back(k);
      std::string next = k;
      if (next.size() < key_size)
        next.push_back('\x00');  // the smallest key after k
      else
        next.back() = static_cast<char>(static_cast<uint8_t>(next.back()) + 1);
      froms.push_back(next);
    }
    froms.push_back(eight ? std::string(8, '\x00') : std::string(1, '\x00'));
    for (const auto& from : froms)
      for (size_t count : {size_t{1}, size_t{3}, size_t{1000}})
        ASSERT_NO_FATAL_FAILURE(m.scan(from, count));
  }
  ASSERT_NO_FATAL_FAILURE(m.sweep(chain));
  ASSERT_NO_FATAL_FAILURE(m.sweep(shared));
  ASSERT_NO_FATAL_FAILURE(m.sweep(extremes));
}

// The randomized differential run (see the top of this file).
template <class MakeHandle>
void byte_key_differential(MakeHandle&& make_handle, size_t key_size, const BytesSuiteOptions& o) {
  auto holder = make_handle();
  auto& h = deref_bytes(holder);
  using H = std::remove_reference_t<decltype(h)>;
  detail::BytesModelCheck<H> m(h);
  const std::vector<std::string> keys = byte_key_pool(key_size, o.pool_keys, o.seed);
  // Scans also start from keys outside the pool.
  const std::vector<std::string> others = byte_key_pool(key_size, o.pool_keys / 4, o.seed + 1);
  std::mt19937_64 rng(o.seed);
  for (size_t i = 0; i < o.ops; ++i) {
    const std::string& k = keys[rng() % keys.size()];
    const size_t len = std::uniform_int_distribution<size_t>(o.min_value, o.max_value)(rng);
    SCOPED_TRACE("op " + std::to_string(i) + " key " + show_key(k) + " seed " +
                 std::to_string(o.seed));
    switch (pick(OpMix{}, BytesRangeHandle<H>, rng)) {
      case Pick::kSearch:
        ASSERT_NO_FATAL_FAILURE(m.search(k));
        break;
      case Pick::kInsert:
        ASSERT_NO_FATAL_FAILURE(m.insert(k, detail::value_for(i, len)));
        break;
      case Pick::kUpdate:
        ASSERT_NO_FATAL_FAILURE(m.update(k, detail::value_for(i, len)));
        break;
      case Pick::kRemove:
        ASSERT_NO_FATAL_FAILURE(m.remove(k));
        break;
      case Pick::kScan: {
        const std::string& from = rng() % 2 ? k : others[rng() % others.size()];
        ASSERT_NO_FATAL_FAILURE(m.scan(from, rng() % (o.max_scan + 1)));
        break;
      }
    }
  }
  ASSERT_NO_FATAL_FAILURE(m.sweep(keys));
}

template <class MakeHandle>
void byte_key_suites(MakeHandle&& make_handle, size_t key_size, BytesSuiteOptions o = {}) {
  {
    SCOPED_TRACE("byte-key edge cases, key_size " + std::to_string(key_size));
    ASSERT_NO_FATAL_FAILURE(byte_key_edge_cases(make_handle, key_size, o));
  }
  SCOPED_TRACE("byte-key differential, key_size " + std::to_string(key_size));
  byte_key_differential(make_handle, key_size, o);
}

// --- concurrent stress over byte keys ------------------------------------------------------------

// Byte keys as run_ranked_stress draws them: rank r is keys[r] of a sorted pool; a scan row whose
// key is not in the pool fails the test (and sets *stray).
struct ByteKeyRanks {
  const std::vector<std::string>* keys;
  std::atomic<bool>* stray;
  template <class Holder>
  static decltype(auto) handle(Holder& holder) {
    return deref_bytes(holder);
  }
  template <class H>
  static constexpr bool kScans = BytesRangeHandle<H>;
  const std::string& key(Key r) const { return (*keys)[r]; }
  std::vector<std::pair<std::string, std::string>> rows;  // a scan's
  std::vector<std::pair<Key, std::string>> by_rank;
  std::vector<std::pair<Key, std::string>>& ranked() {
    by_rank.clear();
    for (auto& [rk, rv] : rows) {
      auto it = std::lower_bound(keys->begin(), keys->end(), rk);
      if (it == keys->end() || *it != rk) {
        *stray = true;  // a key nobody inserted
        ADD_FAILURE() << "scan returned " << show_key(rk) << ", no key of the pool";
        continue;
      }
      by_rank.emplace_back(static_cast<Key>(it - keys->begin()), std::move(rv));
    }
    return by_rank;
  }
};

template <class MakeHandle>
StressOutcome run_byte_key_stress(const std::shared_ptr<shm::Pool>& pool, MakeHandle&& make_handle,
                                  size_t key_size, const StressOptions& o) {
  const std::vector<std::string> keys = byte_key_pool(key_size, o.keys, o.seed);
  std::atomic<bool> stray{false};
  StressOutcome out = run_ranked_stress(pool, std::forward<MakeHandle>(make_handle), keys.size(),
                                        ByteKeyRanks{&keys, &stray, {}, {}}, o);
  EXPECT_FALSE(stray.load());
  return out;
}

template <class MakeHandle>
StressOutcome byte_key_stress_test(const std::shared_ptr<shm::Pool>& pool, MakeHandle&& make_handle,
                                   size_t key_size, const StressOptions& o = {}) {
  StressOutcome out = run_byte_key_stress(pool, std::forward<MakeHandle>(make_handle), key_size, o);
  EXPECT_TRUE(out.result.linearizable) << out.result.explain();
  EXPECT_EQ(out.operations, size_t{o.threads} * o.fibers * o.ops_per_worker);
  std::printf(
      "[ stress   ] %zu byte-key ops (key_size %zu) by %u workers in %.3f s; check %.3f s: %s\n",
      out.operations, key_size, o.threads * o.fibers, out.run_seconds, out.result.seconds,
      to_string(out.result.verdict));
  return out;
}

}  // namespace dmrt::harness
