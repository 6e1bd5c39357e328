// A basic sorted skiplist (one SLS partition): key -> slot word, p = 1/4, private to its server.
#pragma once

#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "runtime/kv.h"

namespace dmrt::hstore {

// Not thread-safe: the SLS guards each partition with its own mutex. Nodes are variable-sized
// (a tower of `level` next pointers), allocated one by one, freed on erase and on destruction.
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
  ~SkipList() {
    clear();
    ::operator delete(head_);
  }
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
    ::operator delete(x);
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
    Node* x = head_->next[0];
    while (x) {
      Node* nx = x->next[0];
      ::operator delete(x);
      x = nx;
    }
    for (int i = 0; i < kMaxLevel; ++i) head_->next[i] = nullptr;
    level_ = 1;
    size_ = 0;
  }

 private:
  static Node* make(Key k, uint64_t v, int lvl) {
    void* p = ::operator new(sizeof(Node) + sizeof(Node*) * static_cast<size_t>(lvl - 1));
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

  Node* head_;
  int level_ = 1;
  size_t size_ = 0;
  uint64_t rng_;
};

}  // namespace dmrt::hstore
