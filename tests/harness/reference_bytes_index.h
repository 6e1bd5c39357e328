// The reference index over byte-string keys (BytesKvHandle, BytesRangeHandle), to prove the
// byte-key suites (tests/harness/bytes_suites.h): each distinct key gets a slot of a
// ReferenceIndex (tests/harness/reference_index.h) the first time any client names it, through a
// directory in this process (a std::map under a mutex, never held across a verb); the slot holds
// the value exactly as the integer reference does, so linearizability is that index's. Slots
// are never given back. A key of 0 or more than key_size bytes is a LimitError.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/kv.h"
#include "tests/harness/reference_index.h"

namespace dmrt::harness {

template <Transport T>
class ReferenceBytesIndex {
 public:
  using ClientT = Client<T>;
  using Slots = ReferenceIndex<T>;

  static std::shared_ptr<ReferenceBytesIndex> create(ClientT& c, uint64_t capacity,
                                                     size_t key_size) {
    auto idx = std::shared_ptr<ReferenceBytesIndex>(new ReferenceBytesIndex(key_size));
    idx->slots_ = Slots::create(c, capacity);
    return idx;
  }

  class Handle {
   public:
    Handle(ReferenceBytesIndex* idx, ClientT* c) : idx_(idx), h_(idx->slots_->handle(*c)) {}
    bool search(std::string_view k, std::string& out) {
      Key s;
      return idx_->find(k, s) && h_.search(s, out);
    }
    bool insert(std::string_view k, std::string_view v) { return h_.insert(idx_->slot(k), v); }
    bool update(std::string_view k, std::string_view v) {
      Key s;
      return idx_->find(k, s) && h_.update(s, v);
    }
    bool remove(std::string_view k) {
      Key s;
      return idx_->find(k, s) && h_.remove(s);
    }
    // Walks the directory in key order from `from`, a batch of keys at a time, reading each
    // key's slot (rows are not one snapshot, as the integer reference's are not).
    void scan(std::string_view from, size_t count,
              std::vector<std::pair<std::string, std::string>>& rows) {
      idx_->check(from);
      rows.clear();
      std::string at(from), v;
      bool first = true;
      while (rows.size() < count) {
        batch_.clear();
        idx_->next_keys(at, first, 32, batch_);
        if (batch_.empty()) break;
        for (auto& [k, s] : batch_)
          if (rows.size() < count && h_.search(s, v)) rows.emplace_back(k, v);
        at = batch_.back().first;
        first = false;
      }
    }

   private:
    ReferenceBytesIndex* idx_;
    typename Slots::Handle h_;
    std::vector<std::pair<std::string, Key>> batch_;
  };

  Handle handle(ClientT& c) { return Handle(this, &c); }

 private:
  explicit ReferenceBytesIndex(size_t key_size) : key_size_(key_size) {}

  void check(std::string_view k) const {
    if (k.empty() || k.size() > key_size_)
      throw LimitError("reference bytes index: a key of " + std::to_string(k.size()) +
                       " bytes (1 to " + std::to_string(key_size_) + ")");
  }
  // The key's slot, if it has one.
  bool find(std::string_view k, Key& s) {
    check(k);
    std::lock_guard g(mu_);
    auto it = dir_.find(k);
    if (it == dir_.end()) return false;
    s = it->second;
    return true;
  }
  // The key's slot, given now if it has none.
  Key slot(std::string_view k) {
    check(k);
    std::lock_guard g(mu_);
    auto it = dir_.find(k);
    if (it != dir_.end()) return it->second;
    const Key s = dir_.size();
    dir_.emplace(std::string(k), s);
    return s;
  }
  // Up to n (key, slot) pairs in key order: from `at` on (inclusive when `first`), else after it.
  void next_keys(const std::string& at, bool first, size_t n,
                 std::vector<std::pair<std::string, Key>>& out) {
    std::lock_guard g(mu_);
    auto it = first ? dir_.lower_bound(at) : dir_.upper_bound(at);
    for (; it != dir_.end() && out.size() < n; ++it) out.emplace_back(it->first, it->second);
  }

  size_t key_size_;
  std::shared_ptr<Slots> slots_;
  std::mutex mu_;
  std::map<std::string, Key, std::less<>> dir_;
};

}  // namespace dmrt::harness
