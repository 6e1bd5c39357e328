// Fuzz target: bytes become operations on one of the indexes, each checked against std::map.
// Built as a libFuzzer target under clang (-Dfuzz); always built as `fuzz_kv_replay`, which feeds
// it seeded random inputs and any corpus files given on the command line (a 'unit' test).
//
// Input: byte 0 picks the index; then 4 bytes per operation: kind, key, value length, value seed.
// Byte-key mode: byte 0 may pick a byte-key target instead (an index built with key_size 32 whose
// handle takes byte-string keys: the reference bytes index of tests/harness, and every index
// whose Options have key_size and whose handle models BytesKvHandle). Its key byte picks one of
// 256 keys of 1..32 bytes (tests/harness/byte_keys.h: prefixes of each other, long shared
// prefixes, 0x00/0xff bytes), and a fifth kind tries a 33-byte key, which must be a LimitError.
// Each index and its model live for the whole process, so state carries over between inputs,
// as it would in a long run (splits, resizes and retrainings accumulate).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dmrt/indexes/chime/chime.h"
#include "dmrt/indexes/dmtree/dmtree.h"
#include "dmrt/indexes/race/race.h"
#include "dmrt/indexes/rolex/rolex.h"
#include "dmrt/indexes/sherman/sherman.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/key_bytes.h"
#include "tests/harness/byte_keys.h"
#include "tests/harness/reference_bytes_index.h"
#include "tests/runtime/test_cluster.h"

namespace dmrt::fuzz {
namespace {

constexpr uint32_t kValueSize = 16;  // fixed-slot indexes store 16 B; RACE keeps the length
constexpr uint64_t kKeys = 256;      // a small key space so that operations meet each other

[[noreturn]] void fail(const char* index, const std::string& what) {
  std::fprintf(stderr, "fuzz_kv: %s: %s\n", index, what.c_str());
  std::abort();
}

// One index under test with its model.
struct Target {
  virtual ~Target() = default;
  virtual const char* name() const = 0;
  virtual bool search(Key k, std::string& out) = 0;
  virtual bool insert(Key k, std::string_view v) = 0;
  virtual bool update(Key k, std::string_view v) = 0;
  virtual bool remove(Key k) = 0;
  // Padding applied to a value by the index (fixed-slot indexes pad to kValueSize).
  virtual std::string stored(std::string v) const { return v; }
  std::map<Key, std::string> model;
};

// A byte-key target (key_size kByteKeySize) with its model.
constexpr size_t kByteKeySize = 32;
struct BytesTarget {
  virtual ~BytesTarget() = default;
  virtual const char* name() const = 0;
  virtual bool search(std::string_view k, std::string& out) = 0;
  virtual bool insert(std::string_view k, std::string_view v) = 0;
  virtual bool update(std::string_view k, std::string_view v) = 0;
  virtual bool remove(std::string_view k) = 0;
  virtual std::string stored(std::string v) const { return v; }
  std::map<std::string, std::string, std::less<>> model;
};

template <class Index, bool kFixedSlots>
struct TypedBytes : BytesTarget {
  TypedBytes(const char* n, std::shared_ptr<Index> i, testing::ShmClient* c)
      : name_(n), index(std::move(i)), handle(index->handle(*c)) {}
  const char* name() const override { return name_; }
  bool search(std::string_view k, std::string& out) override { return handle.search(k, out); }
  bool insert(std::string_view k, std::string_view v) override { return handle.insert(k, v); }
  bool update(std::string_view k, std::string_view v) override { return handle.update(k, v); }
  bool remove(std::string_view k) override { return handle.remove(k); }
  std::string stored(std::string v) const override {
    if (kFixedSlots) v.resize(kValueSize, '\0');
    return v;
  }
  const char* name_;
  std::shared_ptr<Index> index;
  typename Index::Handle handle;
};

template <class Index, bool kFixedSlots>
struct Typed : Target {
  Typed(const char* n, std::shared_ptr<shm::Pool> p, std::shared_ptr<Index> i,
        testing::ShmClient* c)
      : name_(n), pool(std::move(p)), index(std::move(i)), handle(index->handle(*c)) {}
  const char* name() const override { return name_; }
  bool search(Key k, std::string& out) override { return handle.search(k, out); }
  bool insert(Key k, std::string_view v) override { return handle.insert(k, v); }
  bool update(Key k, std::string_view v) override { return handle.update(k, v); }
  bool remove(Key k) override { return handle.remove(k); }
  std::string stored(std::string v) const override {
    if (kFixedSlots) v.resize(kValueSize, '\0');
    return v;
  }
  const char* name_;
  std::shared_ptr<shm::Pool> pool;
  std::shared_ptr<Index> index;
  typename Index::Handle handle;
};

struct Targets {
  std::shared_ptr<shm::Pool> pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  testing::ShmClient client = testing::make_client(pool, 0);
  // The byte-key targets live in a pool of their own: each index type takes its fixed root and
  // lock-table places in a pool (and Sherman the device memory), once.
  std::shared_ptr<shm::Pool> bytes_pool = testing::small_pool(1, 1, uint64_t{256} << 20);
  testing::ShmClient bytes_client = testing::make_client(bytes_pool, 0);
  std::vector<std::unique_ptr<Target>> all;
  std::vector<std::unique_ptr<BytesTarget>> bytes;
  std::vector<std::string> keys = harness::byte_key_pool(kByteKeySize, 256, 1);

  Targets() {
    race::Options ro;
    ro.value_size = kValueSize;
    ro.groups_per_subtable = 8;  // tiny subtables: splits and directory doubling early
    ro.initial_global_depth = 1;
    add<race::RaceIndex<ShmTransport>, false>("race", ro);
    chime::Options co;
    co.value_size = kValueSize;
    co.span = 16;
    co.neighborhood = 4;
    co.internal_span = 4;
    add<chime::Tree<ShmTransport>, true>("chime", co);
    sherman::Options so;
    so.value_size = kValueSize;
    so.leaf_span = 8;
    so.internal_span = 4;
    add<sherman::Tree<ShmTransport>, true>("sherman", so);
    rolex::Options lo;
    lo.value_size = kValueSize;
    lo.compute_retrain_fallback = true;  // no service thread in a fuzz process
    lo.full_slt_wait_ns = 0;
    lo.retrain_threshold = 4;
    add<rolex::Index<ShmTransport>, true>("rolex", lo);
    dmtree::Options dm;
    dm.value_size = kValueSize;
    dm.leaf_span = 16;
    add<dmtree::Tree<ShmTransport>, true>("dmtree", dm);

    auto ref = harness::ReferenceBytesIndex<ShmTransport>::create(bytes_client, 4096, kByteKeySize);
    bytes.push_back(std::make_unique<TypedBytes<harness::ReferenceBytesIndex<ShmTransport>, false>>(
        "reference-bytes", ref, &bytes_client));
    // The indexes that take byte keys, with the same options at key_size 32.
    add_bytes<race::RaceIndex<ShmTransport>, false>("race-bytes", ro);
    add_bytes<chime::Tree<ShmTransport>, true>("chime-bytes", co);
    add_bytes<sherman::Tree<ShmTransport>, true>("sherman-bytes", so);
    add_bytes<rolex::Index<ShmTransport>, true>("rolex-bytes", lo);
    add_bytes<dmtree::Tree<ShmTransport>, true>("dmtree-bytes", dm);
  }
  template <class Index, bool kFixed, class Opt>
  void add_bytes(const char* name, Opt o) {
    if constexpr (requires { o.key_size; } && BytesKvHandle<typename Index::Handle>) {
      o.key_size = kByteKeySize;
      auto idx = Index::create(bytes_client, o);
      bytes.push_back(std::make_unique<TypedBytes<Index, kFixed>>(name, idx, &bytes_client));
    }
  }
  template <class Index, bool kFixed, class Opt>
  void add(const char* name, const Opt& o) {
    auto idx = Index::create(client, o);
    all.push_back(std::make_unique<Typed<Index, kFixed>>(name, pool, idx, &client));
  }
};

Targets& targets() {
  static Targets t;
  return t;
}

std::string value_of(uint8_t len, uint8_t seed) {
  std::string v(1 + len % kValueSize, '\0');
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>('A' + (seed + i * 7) % 58);
  return v;
}

}  // namespace
}  // namespace dmrt::fuzz

namespace dmrt::fuzz {
namespace {

void run_bytes(BytesTarget& t, const std::vector<std::string>& keys, const uint8_t* data,
               size_t size) {
  std::string out;
  const std::string too_long(kByteKeySize + 1, 'k');
  for (size_t i = 1; i + 4 <= size; i += 4) {
    const std::string& k = keys[data[i + 1] % keys.size()];
    std::string v = value_of(data[i + 2], data[i + 3]);
    auto it = t.model.find(k);
    bool present = it != t.model.end();
    const std::string shown = harness::show_key(k);
    switch (data[i] % 5) {
      case 0:
        if (t.search(k, out) != present) fail(t.name(), "search " + shown + " presence");
        if (present && out != t.stored(it->second)) fail(t.name(), "search " + shown + " value");
        break;
      case 1:
        if (t.insert(k, v) == present) fail(t.name(), "insert " + shown);
        if (!present) t.model.emplace(k, v);
        break;
      case 2:
        if (t.update(k, v) != present) fail(t.name(), "update " + shown);
        if (present) it->second = v;
        break;
      case 3:
        if (t.remove(k) != present) fail(t.name(), "remove " + shown);
        if (present) t.model.erase(it);
        break;
      case 4:
        try {
          t.insert(too_long, v);
          fail(t.name(), "a key of " + std::to_string(too_long.size()) + " bytes was taken");
        } catch (const LimitError&) {
        }
        break;
    }
  }
}

}  // namespace
}  // namespace dmrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dmrt::fuzz;
  if (size < 1) return 0;
  auto& ts = targets().all;
  auto& bs = targets().bytes;
  if (const size_t pick = data[0] % (ts.size() + bs.size()); pick >= ts.size()) {
    run_bytes(*bs[pick - ts.size()], targets().keys, data, size);
    return 0;
  }
  Target& t = *ts[data[0] % ts.size()];
  std::string out;
  for (size_t i = 1; i + 4 <= size; i += 4) {
    dmrt::Key k = data[i + 1] % kKeys;
    std::string v = value_of(data[i + 2], data[i + 3]);
    auto it = t.model.find(k);
    bool present = it != t.model.end();
    switch (data[i] % 4) {
      case 0:
        if (t.search(k, out) != present)
          fail(t.name(), "search " + std::to_string(k) + " presence");
        if (present && out != t.stored(it->second))
          fail(t.name(), "search " + std::to_string(k) + " value");
        break;
      case 1:
        if (t.insert(k, v) == present) fail(t.name(), "insert " + std::to_string(k));
        if (!present) t.model[k] = v;
        break;
      case 2:
        if (t.update(k, v) != present) fail(t.name(), "update " + std::to_string(k));
        if (present) it->second = v;
        break;
      case 3:
        if (t.remove(k) != present) fail(t.name(), "remove " + std::to_string(k));
        t.model.erase(k);
        break;
    }
  }
  return 0;
}
