// A basic sorted skiplist (one SLS partition): key -> slot word, p = 1/4, private to its server.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/huge_pages.h"
#include "dmrt/runtime/key_bytes.h"

namespace dmrt::hstore {

// Where a skiplist's nodes live: 32 MiB chunks of HugePageMemory, carved by a bump pointer, with a
// free list per tower height. A descent visits about 30 nodes spread over the whole list; on 4 KiB
// pages nearly every visit missed the TLB (a two-dimensional page walk under a hypervisor), which
// made one insert of a 1 M-key SLS cost about 10 us on the development VM. Not thread-safe, like
// the list.
class NodeArena {
 public:
  static constexpr size_t kChunkBytes = size_t{32} << 20;
  NodeArena() = default;
  NodeArena(const NodeArena&) = delete;
  NodeArena& operator=(const NodeArena&) = delete;
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
      next_ = chunks_[used_++].data();
      left_ = kChunkBytes;
      return;
    }
    chunks_.emplace_back(kChunkBytes);
    used_ = chunks_.size();
    next_ = chunks_.back().data();
    left_ = kChunkBytes;
  }
  std::vector<HugePageMemory> chunks_;
  size_t used_ = 0;  // chunks handed out since the last reset
  std::byte* next_ = nullptr;
  size_t left_ = 0;
  void* free_[17] = {};
};

// The slots of a skiplist's hot-node cache (below), in HugePageMemory since its loads are random
// (a 256 Ki-slot cache on 4 KiB pages spans 512 pages). Starting again (reset) maps fresh zero
// pages instead of clearing.
template <class P>
class HotSlots {
 public:
  bool empty() const { return mem_.size() == 0; }
  size_t size() const { return mem_.size() / sizeof(P); }
  P& operator[](size_t i) { return reinterpret_cast<P*>(mem_.data())[i]; }
  // n null slots (0: none).
  void reset(size_t n) { mem_ = HugePageMemory(n * sizeof(P)); }

 private:
  HugePageMemory mem_;
};

// Not thread-safe: the SLS guards each partition with its own mutex. Nodes are variable-sized
// (a tower of `level` next pointers, then the key's bytes beyond its first 8), taken from the
// list's NodeArena, returned on erase. Keys are byte strings in std::string_view order; a node
// keeps a key's first 8 bytes as a big-endian number (`pre`, zero-padded), so an integer key
// (its 8 big-endian bytes) compares as one number, and only keys sharing 8 bytes compare further.
//
// Hot nodes: a direct-mapped cache (hash of the whole key -> the node holding it) remembers the
// nodes upserts last found or made, so that an upsert or find of a key already in the list and
// in the cache costs one compare instead of a descent (about 30 cache misses in a 250 k-node
// list, 2 us). Under skewed writes (YCSB A, zipfian 0.99) the same keys are overwritten again and
// again, and the descents were half the SLS's CPU. The cache has as many slots as the list has
// keys (a power of two, 4096 to `hot_slots`, 8 bytes each): zipfian 0.99's tail is long, and a
// fixed 64 Ki slots per partition of 1 M keys still missed 15-20% of the updates. When the list
// outgrows it, the cache starts again twice as large and empty (no rehash: it refills as keys
// are upserted). Only a node of the list is ever in the cache, in the slot of its own key: erase
// clears that slot when it holds the erased node, clear and build_sorted clear them all. The
// list's order and contents do not depend on the cache.
class SkipList {
 public:
  static constexpr int kMaxLevel = 16;  // 4^16 keys per partition before towers stop growing
  static constexpr size_t kMinHotSlots = 4096;
  static constexpr size_t kDefaultHotSlots = size_t{1} << 20;  // at most 8 MiB per list

  struct Node {
    uint64_t pre;  // bytes 0..8 of the key, big-endian, zero-padded
    uint64_t value;
    uint32_t len;  // the key's length
    int level;
    Node* next[1];  // `level` entries, then len - 8 key bytes when len > 8

    KeyView tail() const {
      return len > 8 ? KeyView(reinterpret_cast<const char*>(next + level), len - 8) : KeyView();
    }
    std::string key() const {
      std::string s(8, '\0');
      put_key_bytes(pre, s.data());
      s.resize(std::min<uint32_t>(len, 8));
      s.append(tail());
      return s;
    }
  };

  // `key_size`: the longest key this list holds (sizes every node alike, so that the free lists
  // per tower height can hand any node to any key). `hot_slots`: the most slots the hot-node
  // cache grows to, rounded down to a power of two (0: no cache).
  explicit SkipList(uint64_t seed = 0x9e3779b97f4a7c15ull, uint32_t key_size = 8,
                    size_t hot_slots = kDefaultHotSlots)
      : rng_(seed | 1) {
    set_key_size(key_size);
    if (hot_slots) {
      hot_max_ = 1;
      while (hot_max_ * 2 <= hot_slots) hot_max_ *= 2;
      hot_.reset(std::min(hot_max_, kMinHotSlots));
    }
    head_ = make({}, 0, kMaxLevel);
  }
  ~SkipList() = default;
  SkipList(const SkipList&) = delete;
  SkipList& operator=(const SkipList&) = delete;

  // Before the first insert (the SLS learns key_size from the meta block).
  void set_key_size(uint32_t key_size) {
    extra_ = key_size > 8 ? (key_size - 8 + size_t{7}) & ~size_t{7} : 0;
  }

  size_t size() const { return size_; }
  // Upserts and finds the hot-node cache answered without a descent (since construction).
  uint64_t hot_hits() const { return hot_hits_; }
  size_t hot_slots() const { return hot_.size(); }

  // Inserts or overwrites; true when the key was new.
  bool upsert(KeyView k, uint64_t v) {
    const Probe p(k);
    Node** hot = hot_slot(p);
    if (hot && *hot && cmp(*hot, p) == 0) {
      (*hot)->value = v;
      ++hot_hits_;
      return false;
    }
    Node* update[kMaxLevel];
    Node* x = descend(p, update);
    if (x && cmp(x, p) == 0) {
      x->value = v;
      if (hot) *hot = x;
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
    if (hot) *hot = n;
    if (++size_ > hot_.size()) fit_hot();
    return true;
  }

  bool erase(KeyView k) {
    Node* update[kMaxLevel];
    const Probe p(k);
    Node* x = descend(p, update);
    if (!x || cmp(x, p) != 0) return false;
    for (int i = 0; i < level_ && update[i]->next[i] == x; ++i) update[i]->next[i] = x->next[i];
    if (Node** hot = hot_slot(p); hot && *hot == x) *hot = nullptr;  // its memory is reused
    arena_.give(x, x->level);
    while (level_ > 1 && head_->next[level_ - 1] == nullptr) --level_;
    --size_;
    return true;
  }

  bool find(KeyView k, uint64_t& v) {
    const Probe p(k);
    if (Node** hot = hot_slot(p); hot && *hot && cmp(*hot, p) == 0) {
      v = (*hot)->value;
      ++hot_hits_;
      return true;
    }
    const Node* x = lower_bound(p);
    if (!x || cmp(x, p) != 0) return false;
    v = x->value;
    return true;
  }

  // First node with key >= k (null at the end); iterate with next().
  const Node* lower_bound(KeyView k) const { return lower_bound(Probe(k)); }
  const Node* first() const { return head_->next[0]; }
  static const Node* next(const Node* n) { return n->next[0]; }

  // Builds from ascending distinct pairs into an empty list in O(n).
  void build_sorted(const std::vector<std::pair<std::string, uint64_t>>& rows) {
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
    fit_hot();
  }

  void clear() {
    if (!hot_.empty()) hot_.reset(std::min(hot_max_, kMinHotSlots));
    arena_.reset();
    head_ = make({}, 0, kMaxLevel);
    level_ = 1;
    size_ = 0;
  }

 private:
  // A key as the nodes hold it.
  struct Probe {
    explicit Probe(KeyView k) : len(static_cast<uint32_t>(k.size())) {
      char b[8] = {};
      if (!k.empty())
        std::memcpy(b, k.data(), std::min<size_t>(k.size(), 8));  // data() may be null
      pre = key_of_bytes({b, 8});
      if (k.size() > 8) tail = k.substr(8);
    }
    uint64_t pre;
    uint32_t len;
    KeyView tail;
  };
  // <0, 0, >0 as n's key orders before, equal to, after p's. With equal first 8 bytes, a key of
  // at most 8 bytes is a prefix of the other (the padding is zeros): the shorter sorts first.
  static int cmp(const Node* n, const Probe& p) {
    if (n->pre != p.pre) return n->pre < p.pre ? -1 : 1;
    if (n->len <= 8 || p.len <= 8) return (n->len > p.len) - (n->len < p.len);
    return n->tail().compare(p.tail);
  }
  // Grows the hot-node cache (empty again) to the list's size, within its bounds.
  void fit_hot() {
    size_t n = hot_.size();
    while (n < size_ && n < hot_max_) n *= 2;
    if (n != hot_.size()) hot_.reset(n);
  }
  // The hot-node cache's slot for p's key (null without a cache). The whole key is hashed: byte
  // keys often share their first 8 bytes ("user...").
  Node** hot_slot(const Probe& p) {
    if (hot_.empty()) return nullptr;
    uint64_t h = p.pre ^ (uint64_t{p.len} << 57);
    if (!p.tail.empty()) h ^= hash_bytes(p.tail);
    h = mix64(h);  // every bit of h reaches the low ones
    return &hot_[h & (hot_.size() - 1)];
  }
  const Node* lower_bound(const Probe& p) const {
    const Node* x = head_;
    for (int i = level_ - 1; i >= 0; --i)
      while (x->next[i] && cmp(x->next[i], p) < 0) x = x->next[i];
    return x->next[0];
  }
  Node* make(KeyView k, uint64_t v, int lvl) {
    const size_t tower = sizeof(Node) + sizeof(Node*) * static_cast<size_t>(lvl - 1);
    void* p = arena_.take(tower + extra_, lvl);
    Node* n = static_cast<Node*>(p);
    const Probe pr(k);
    n->pre = pr.pre;
    n->value = v;
    n->len = pr.len;
    n->level = lvl;
    for (int i = 0; i < lvl; ++i) n->next[i] = nullptr;
    if (!pr.tail.empty()) std::memcpy(n->next + lvl, pr.tail.data(), pr.tail.size());
    return n;
  }
  // Fills update[i] with the last node before k on level i; returns the node at/after k.
  Node* descend(const Probe& p, Node** update) {
    Node* x = head_;
    for (int i = level_ - 1; i >= 0; --i) {
      while (x->next[i] && cmp(x->next[i], p) < 0) x = x->next[i];
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

  NodeArena arena_;   // first: the nodes go with it
  size_t extra_ = 0;  // key bytes beyond 8 a node has room for
  Node* head_;
  int level_ = 1;
  size_t size_ = 0;
  uint64_t rng_;
  HotSlots<Node*> hot_;  // the hot-node cache (empty: none)
  size_t hot_max_ = 0;
  uint64_t hot_hits_ = 0;
};

}  // namespace dmrt::hstore
