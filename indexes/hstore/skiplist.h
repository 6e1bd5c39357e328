// A basic sorted skiplist (one SLS partition): key -> slot word, p = 1/4, private to its server.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "runtime/kv.h"

namespace dmrt::hstore {

// Where a skiplist's nodes live: 32 MiB chunks of anonymous memory the kernel may back with
// 2 MiB pages (MADV_HUGEPAGE), carved by a bump pointer, with a free list per tower height. A
// descent visits about 30 nodes spread over the whole list; on 4 KiB pages nearly every visit
// missed the TLB (a two-dimensional page walk under a hypervisor), which made one insert of a
// 1 M-key SLS cost about 10 us on the development VM. Not thread-safe, like the list.
class NodeArena {
 public:
  static constexpr size_t kChunkBytes = size_t{32} << 20;
  NodeArena() = default;
  NodeArena(const NodeArena&) = delete;
  NodeArena& operator=(const NodeArena&) = delete;
  ~NodeArena() {
    for (void* c : chunks_) ::munmap(c, kChunkBytes);
  }
  // `bytes` is a multiple of 8; `cls` names its size (a tower height) for the free list.
  void* take(size_t bytes, int cls) {
    if (void* p = free_[cls]) {
      free_[cls] = *static_cast<void**>(p);
      return p;
    }
    if (left_ < bytes) grow();
    void* p = next_;
    next_ += bytes;
    left_ -= bytes;
    return p;
  }
  void give(void* p, int cls) {
    *static_cast<void**>(p) = free_[cls];
    free_[cls] = p;
  }
  // Forgets every node (the memory stays mapped for reuse).
  void reset() {
    for (void*& f : free_) f = nullptr;
    used_ = 0;
    next_ = nullptr;
    left_ = 0;
  }

 private:
  void grow() {
    if (used_ < chunks_.size()) {
      next_ = static_cast<std::byte*>(chunks_[used_++]);
      left_ = kChunkBytes;
      return;
    }
    void* c =
        ::mmap(nullptr, kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c == MAP_FAILED) throw std::bad_alloc();
    ::madvise(c, kChunkBytes, MADV_HUGEPAGE);  // a hint: without THP, 4 KiB pages as before
    chunks_.push_back(c);
    used_ = chunks_.size();
    next_ = static_cast<std::byte*>(c);
    left_ = kChunkBytes;
  }
  std::vector<void*> chunks_;
  size_t used_ = 0;  // chunks handed out since the last reset
  std::byte* next_ = nullptr;
  size_t left_ = 0;
  void* free_[17] = {};
};

// Not thread-safe: the SLS guards each partition with its own mutex. Nodes are variable-sized
// (a tower of `level` next pointers), taken from the list's NodeArena, returned on erase.
class SkipList {
 public:
  static constexpr int kMaxLevel = 16;  // 4^16 keys per partition before towers stop growing

  struct Node {
    Key key;
    uint64_t value;
    int level;
    Node* next[1];  // `level` entries
  };

  explicit SkipList(uint64_t seed = 0x9e3779b97f4a7c15ull) : rng_(seed | 1) {
    head_ = make(0, 0, kMaxLevel);
  }
  ~SkipList() = default;
  SkipList(const SkipList&) = delete;
  SkipList& operator=(const SkipList&) = delete;

  size_t size() const { return size_; }

  // Inserts or overwrites; true when the key was new.
  bool upsert(Key k, uint64_t v) {
    Node* update[kMaxLevel];
    Node* x = descend(k, update);
    if (x && x->key == k) {
      x->value = v;
      return false;
    }
    int lvl = random_level();
    if (lvl > level_) {
      for (int i = level_; i < lvl; ++i) update[i] = head_;
      level_ = lvl;
    }
    Node* n = make(k, v, lvl);
    for (int i = 0; i < lvl; ++i) {
      n->next[i] = update[i]->next[i];
      update[i]->next[i] = n;
    }
    ++size_;
    return true;
  }

  bool erase(Key k) {
    Node* update[kMaxLevel];
    Node* x = descend(k, update);
    if (!x || x->key != k) return false;
    for (int i = 0; i < level_ && update[i]->next[i] == x; ++i) update[i]->next[i] = x->next[i];
    arena_.give(x, x->level);
    while (level_ > 1 && head_->next[level_ - 1] == nullptr) --level_;
    --size_;
    return true;
  }

  bool find(Key k, uint64_t& v) const {
    const Node* x = lower_bound(k);
    if (!x || x->key != k) return false;
    v = x->value;
    return true;
  }

  // First node with key >= k (null at the end); iterate with next().
  const Node* lower_bound(Key k) const {
    const Node* x = head_;
    for (int i = level_ - 1; i >= 0; --i)
      while (x->next[i] && x->next[i]->key < k) x = x->next[i];
    return x->next[0];
  }
  const Node* first() const { return head_->next[0]; }
  static const Node* next(const Node* n) { return n->next[0]; }

  // Builds from ascending distinct pairs into an empty list in O(n).
  void build_sorted(const std::vector<std::pair<Key, uint64_t>>& rows) {
    clear();
    Node* tail[kMaxLevel];
    for (int i = 0; i < kMaxLevel; ++i) tail[i] = head_;
    for (const auto& [k, v] : rows) {
      int lvl = random_level();
      if (lvl > level_) level_ = lvl;
      Node* n = make(k, v, lvl);
      for (int i = 0; i < lvl; ++i) {
        n->next[i] = nullptr;
        tail[i]->next[i] = n;
        tail[i] = n;
      }
      ++size_;
    }
  }

  void clear() {
    arena_.reset();
    head_ = make(0, 0, kMaxLevel);
    level_ = 1;
    size_ = 0;
  }

 private:
  Node* make(Key k, uint64_t v, int lvl) {
    void* p = arena_.take(sizeof(Node) + sizeof(Node*) * static_cast<size_t>(lvl - 1), lvl);
    Node* n = static_cast<Node*>(p);
    n->key = k;
    n->value = v;
    n->level = lvl;
    for (int i = 0; i < lvl; ++i) n->next[i] = nullptr;
    return n;
  }
  // Fills update[i] with the last node before k on level i; returns the node at/after k.
  Node* descend(Key k, Node** update) {
    Node* x = head_;
    for (int i = level_ - 1; i >= 0; --i) {
      while (x->next[i] && x->next[i]->key < k) x = x->next[i];
      update[i] = x;
    }
    return x->next[0];
  }
  int random_level() {
    // xorshift64; two bits per level give p = 1/4
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    uint64_t r = rng_;
    int lvl = 1;
    while (lvl < kMaxLevel && (r & 3) == 0) {
      ++lvl;
      r >>= 2;
    }
    return lvl;
  }

  NodeArena arena_;  // first: the nodes go with it
  Node* head_;
  int level_ = 1;
  size_t size_ = 0;
  uint64_t rng_;
};

}  // namespace dmrt::hstore
