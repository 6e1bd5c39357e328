// The key-value contract every index handle offers (to dmrt-bench, the tests and the checker): Key,
// the handle concepts and index stats. The runtime owns it so that nothing below dmrt/indexes/
// names an index.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dmrt {

using Key = uint64_t;

// The operations of the contract below, as histories (dmrt/check/history.h) and workloads name
// them. kRmw: a read-modify-write (search, then update of the value found).
enum class OpKind : uint8_t { kSearch, kInsert, kUpdate, kRemove, kScan, kRmw };
inline constexpr size_t kOpKinds = 6;

constexpr const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::kSearch:
      return "search";
    case OpKind::kInsert:
      return "insert";
    case OpKind::kUpdate:
      return "update";
    case OpKind::kRemove:
      return "remove";
    case OpKind::kScan:
      return "scan";
    case OpKind::kRmw:
      return "rmw";
  }
  return "?";
}

// Figures an index reports under `index_stats` in dmrt-bench JSON (load_factor, resizes, ...).
using IndexStats = std::map<std::string, double>;

// Semantics, identical for every index so that one model checks them all:
//   search  -> true and the value when the key is present, false otherwise.
//   insert  -> insert-if-absent: true when the key was absent and is now present with `value`,
//              false (and no change) when it was already present.
//   update  -> true when the key was present and now holds `value`, false when absent.
//   remove  -> true when the key was present and is now absent, false when absent.
//   scan    -> up to `count` pairs with key >= `from`, ascending (range indexes only).
// A handle belongs to one client (one fiber); it may keep per-client caches.
// Values: RACE and HStore keep each value's length; the tree and learned indexes (CHIME, Sherman,
// DMTree, ROLEX) store values inline in fixed `value_size` slots, as their papers do, so a shorter
// value reads back zero-padded to value_size bytes. Longer values are rejected (LimitError).
template <class H>
concept KvHandle = requires(H& h, Key k, std::string_view v, std::string& out) {
  { h.search(k, out) } -> std::same_as<bool>;
  { h.insert(k, v) } -> std::same_as<bool>;
  { h.update(k, v) } -> std::same_as<bool>;
  { h.remove(k) } -> std::same_as<bool>;
};

template <class H>
concept RangeHandle = KvHandle<H> &&
    requires(H& h, Key from, size_t count, std::vector<std::pair<Key, std::string>>& rows) {
  { h.scan(from, count, rows) } -> std::same_as<void>;
};

// The same contract over byte-string keys (dmrt/runtime/key_bytes.h): an index built with key_size
// > 8 takes keys of 1 to key_size bytes through these overloads, and a key longer than its key_size
// is rejected (LimitError). Integer keys still work on such an index: k is key_bytes(k). An index
// left at key_size 8 takes only 8-byte keys here. Scans return the keys as bytes.
template <class H>
concept BytesKvHandle = requires(H& h, std::string_view k, std::string_view v, std::string& out) {
  { h.search(k, out) } -> std::same_as<bool>;
  { h.insert(k, v) } -> std::same_as<bool>;
  { h.update(k, v) } -> std::same_as<bool>;
  { h.remove(k) } -> std::same_as<bool>;
};

template <class H>
concept BytesRangeHandle = BytesKvHandle<H> &&
    requires(H& h, std::string_view from, size_t count,
             std::vector<std::pair<std::string, std::string>>& rows) {
  { h.scan(from, count, rows) } -> std::same_as<void>;
};

}  // namespace dmrt
