// A small, obviously-correct remote index used to prove the harness suites: a direct-mapped
// table of 8-byte slots (key k lives in slot k, so keys must be < capacity), each holding the
// GlobalAddress of an immutable, out-of-place value block (0 = absent). Every change is one CAS
// on the slot; blocks are never freed, so a reader holding a slot's old address still reads the
// value that address named. Linearization points: the slot read (search, failed calls) or the
// successful CAS (insert, update, remove).
//
// Fault switches (runtime flags, test-only) make it wrong on purpose, so tests can prove the
// checker notices:
//   stale_search        search answers from a per-handle cache of values it has seen before.
//   update_without_cas  update overwrites the slot with a plain write (can resurrect a removed
//                       key or lose a concurrent change).
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dmrt/runtime/client.h"
#include "dmrt/runtime/kv.h"

namespace dmrt::harness {

struct ReferenceFaults {
  bool stale_search = false;
  bool update_without_cas = false;
};

template <Transport T>
class ReferenceIndex {
 public:
  using ClientT = Client<T>;

  static std::shared_ptr<ReferenceIndex> create(ClientT& c, uint64_t capacity,
                                                ReferenceFaults faults = {}) {
    auto idx = std::shared_ptr<ReferenceIndex>(new ReferenceIndex(capacity, faults));
    idx->table_ = c.alloc(capacity * 8);
    std::vector<uint64_t> zeros(std::min<uint64_t>(capacity, 4096), 0);
    for (uint64_t k = 0; k < capacity; k += zeros.size()) {
      uint64_t n = std::min<uint64_t>(zeros.size(), capacity - k);
      c.write(idx->table_ + k * 8, zeros.data(), static_cast<uint32_t>(n * 8));
    }
    return idx;
  }

  class Handle {
   public:
    Handle(const ReferenceIndex* idx, ClientT* c) : idx_(idx), c_(c) {}

    bool search(Key k, std::string& out) {
      if (idx_->faults_.stale_search) {
        if (auto it = cache_.find(k); it != cache_.end()) {
          out = it->second;
          return true;
        }
      }
      uint64_t a = c_->template read_value<uint64_t>(slot(k));
      if (!a) return false;
      read_block(GlobalAddress::from_raw(a), out);
      if (idx_->faults_.stale_search) cache_[k] = out;
      return true;
    }
    bool insert(Key k, std::string_view v) {
      GlobalAddress slot_addr = slot(k);
      if (c_->template read_value<uint64_t>(slot_addr)) return false;
      GlobalAddress b = write_block(v);
      return c_->cas(slot_addr, 0, b.raw()) == 0;  // the block leaks on failure: never shared
    }
    bool update(Key k, std::string_view v) {
      GlobalAddress slot_addr = slot(k);
      uint64_t cur = c_->template read_value<uint64_t>(slot_addr);
      if (!cur) return false;
      GlobalAddress b = write_block(v);
      if (idx_->faults_.update_without_cas) {
        c_->pause();  // widen the window the fault opens
        uint64_t raw = b.raw();
        c_->write(slot_addr, &raw, 8);
        return true;
      }
      for (;;) {
        uint64_t old = c_->cas(slot_addr, cur, b.raw());
        if (old == cur) return true;
        if (!old) return false;  // removed meanwhile: linearize at the CAS that saw it absent
        cur = old;
      }
    }
    bool remove(Key k) {
      GlobalAddress slot_addr = slot(k);
      uint64_t cur = c_->template read_value<uint64_t>(slot_addr);
      for (;;) {
        if (!cur) return false;
        uint64_t old = c_->cas(slot_addr, cur, 0);
        if (old == cur) return true;
        cur = old;
      }
    }
    void scan(Key from, size_t count, std::vector<std::pair<Key, std::string>>& rows) {
      rows.clear();
      constexpr uint64_t kChunk = 32;
      uint64_t slots[kChunk];
      for (Key k = from; k < idx_->capacity_ && rows.size() < count; k += kChunk) {
        uint64_t n = std::min<uint64_t>(kChunk, idx_->capacity_ - k);
        c_->read(idx_->table_ + k * 8, slots, static_cast<uint32_t>(n * 8));
        for (uint64_t i = 0; i < n && rows.size() < count; ++i) {
          if (!slots[i]) continue;
          std::string v;
          read_block(GlobalAddress::from_raw(slots[i]), v);
          rows.emplace_back(k + i, std::move(v));
        }
      }
    }

   private:
    GlobalAddress slot(Key k) const {
      if (k >= idx_->capacity_)
        throw std::out_of_range("reference index: key " + std::to_string(k) +
                                " is beyond its capacity of " + std::to_string(idx_->capacity_));
      return idx_->table_ + k * 8;
    }
    // Block: [length: 8 bytes][bytes], at least 64 bytes, written once before it is published.
    GlobalAddress write_block(std::string_view v) {
      uint64_t bytes = std::max<uint64_t>(64, 8 + v.size());
      buf_.assign(bytes, std::byte{0});
      uint64_t len = v.size();
      std::memcpy(buf_.data(), &len, 8);
      std::memcpy(buf_.data() + 8, v.data(), v.size());
      GlobalAddress b = c_->alloc(bytes);
      c_->write(b, buf_.data(), static_cast<uint32_t>(bytes));
      return b;
    }
    void read_block(GlobalAddress b, std::string& out) {
      std::byte head[64];
      c_->read(b, head, 64);
      uint64_t len;
      std::memcpy(&len, head, 8);
      out.assign(reinterpret_cast<const char*>(head + 8), std::min<uint64_t>(len, 56));
      if (len > 56) {
        out.resize(len);
        c_->read(b + 64, out.data() + 56, static_cast<uint32_t>(len - 56));
      }
    }

    const ReferenceIndex* idx_;
    ClientT* c_;
    std::vector<std::byte> buf_;
    std::unordered_map<Key, std::string> cache_;
  };

  Handle handle(ClientT& c) const { return Handle(this, &c); }
  uint64_t capacity() const { return capacity_; }

 private:
  ReferenceIndex(uint64_t capacity, ReferenceFaults faults)
      : capacity_(capacity), faults_(faults) {}

  uint64_t capacity_;
  ReferenceFaults faults_;
  GlobalAddress table_;
};

}  // namespace dmrt::harness
