// Shared B+-tree upper part: root word, cached/remote traversal with B-link moves, separator
// insertion.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dmrt/indexes/common/flush_points.h"
#include "dmrt/indexes/common/internal_node.h"
#include "dmrt/indexes/common/local_lock_table.h"
#include "dmrt/indexes/common/node_cache.h"
#include "dmrt/indexes/common/striped.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::btree {

// Root word (one CASable 8-byte slot from dmrt/runtime/layout.h): level:8 | node:8 | offset:48, so
// growing the tree swaps root address and height atomically. Level 0 = the root is a leaf.
struct RootWord {
  uint8_t level = 0;
  GlobalAddress addr;
  uint64_t raw() const {
    return uint64_t{level} << 56 | uint64_t{addr.node()} << 48 | addr.offset();
  }
  static RootWord from_raw(uint64_t r) {
    return {static_cast<uint8_t>(r >> 56),
            GlobalAddress(static_cast<NodeId>((r >> 48) & 0xff), r & GlobalAddress::kOffsetMask)};
  }
};

// Where a key's leaf is, as far as the upper levels know.
template <class K>
struct BasicLocated {
  GlobalAddress leaf;
  GlobalAddress next;       // parent's next child pointer (sibling-based validation); null = last
  bool from_cache = false;  // the parent came from the compute-side cache (may be stale)
  typename BasicNodeCache<K>::NodePtr parent;  // the cached parent, to invalidate when stale
  bool tagged = false;  // the parent's entry carries a tag (tagged bottom level)
  uint64_t tag = 0;     // that tag
};
using Located = BasicLocated<IntKeys>;

// Where the upper levels flush on memory no host keeps coherent (docs/cxl-porting.md,
// "Coherence"). Each index maps its own flush points (FlushPoint) onto these three, so that its
// tests can remove any one. The root word's publication at create() always writes back: it is
// setup, outside what sim's coherence model times, and cannot be disproved there.
struct CoreFlushes {
  FlushHint root_read = FlushHint::kNone;   // the root word, read to learn a grown root
  FlushHint node_read = FlushHint::kNone;   // an internal node's image, read locked or not
  FlushHint node_write = FlushHint::kNone;  // a new node, or one rewritten under its lock
};

// The core's hints from an index's flush points, less those its fault switch removed. `Point`
// names them kRootInvalidate, kInternalInvalidate and kInternalWriteBack.
template <class Point>
constexpr CoreFlushes core_flushes(const FlushPoints<Point>& skipped) {
  return {flush_hint(skipped, Point::kRootInvalidate, FlushHint::kInvalidate),
          flush_hint(skipped, Point::kInternalInvalidate, FlushHint::kInvalidate),
          flush_hint(skipped, Point::kInternalWriteBack, FlushHint::kWriteBack)};
}

// Counters shared by the clients of one process (striped: every search adds to one, and a
// single shared word would move between the threads' caches on each).
struct CoreStats {
  StripedCounter cache_hits, cache_misses, internal_splits, root_grows, internal_reads, retries;
  StripedCounter takeovers;  // internal-node locks taken from a dead holder
};

// K: the key policy (btree_keys.h): IntKeys (today's integer keys) or ByteKeys.
template <Transport T, class K = IntKeys>
class BTreeCore {
 public:
  using InternalNode = BasicInternalNode<K>;
  using NodeCache = BasicNodeCache<K>;
  using Located = BasicLocated<K>;
  using KeyT = typename K::Key;
  using View = typename K::View;

  // `cached_levels`: internal levels kept in the compute-side cache, from the bottom (level 1);
  // 0 = all of them. DMTree caches the bottom level only, as its paper does. `tag_level1`: the
  // bottom-level nodes carry a tag per child (internal_node.h; DMTree's version IDs). `keys`: the
  // key policy's instance (ByteKeys carries key_size).
  BTreeCore(GlobalAddress root_slot, uint32_t fanout, uint64_t cache_bytes, LocalLockTable* llt,
            unsigned cached_levels = 0, bool tag_level1 = false, K keys = K{})
      : keys_(keys),
        root_slot_(root_slot),
        fanout_(fanout),
        cache_(cache_bytes, keys.words()),
        llt_(llt),
        cached_levels_(cached_levels),
        tag_level1_(tag_level1) {
    if (fanout < 4 || fanout > 1024)
      throw ConfigError("internal node fanout must be in [4, 1024], got " + std::to_string(fanout));
  }

  // --- root -----------------------------------------------------------------------------------
  static void publish_root(Client<T>& c, GlobalAddress slot, RootWord rw) {
    if (rw.addr.node() > 0xff) throw ConfigError("root node id must fit 8 bits");
    uint64_t raw = rw.raw();
    c.write(slot, &raw, 8, FlushHint::kWriteBack);
  }
  RootWord read_root(Client<T>& c) {
    uint64_t raw = c.template read_value<uint64_t>(root_slot_, flushes_.root_read);
    if (raw == 0)
      throw ConfigError("no tree at root slot " + root_slot_.to_string() + " (create it first)");
    RootWord rw = RootWord::from_raw(raw);
    remember_root(rw);
    return rw;
  }
  // Cached root; re-read while the root is a leaf (cheap: only tiny trees) or never read yet.
  RootWord root(Client<T>& c) {
    uint64_t raw = root_raw_.load(std::memory_order_acquire);
    if (raw == 0 || RootWord::from_raw(raw).level == 0) return read_root(c);
    return RootWord::from_raw(raw);
  }
  // The hints of the index's flush points (set once, before any client uses the core).
  void set_flushes(CoreFlushes f) { flushes_ = f; }

  uint8_t cached_height() const { return RootWord::from_raw(root_raw_.load()).level; }

  // --- traversal
  // ----------------------------------------------------------------------------------
  Located locate(Client<T>& c, View k) {
    for (;;) {
      GlobalAddress cur;
      unsigned lvl;
      if (auto n = cache_.find(k, 1)) {
        size_t p = n->child_pos(k);
        if (n->level == 1) {
          stats_.cache_hits.fetch_add(1, std::memory_order_relaxed);
          return child_of(*n, p, n);
        }
        cur = n->child_at(p);
        lvl = n->level - 1u;
      } else {
        RootWord rw = root(c);
        cur = rw.addr;
        lvl = rw.level;
      }
      stats_.cache_misses.fetch_add(1, std::memory_order_relaxed);
      if (lvl == 0) return {cur, GlobalAddress::null(), false, nullptr};
      bool restart = false;
      while (!restart) {
        InternalNode n = read_internal(c, cur, lvl);
        if (!n.covers(k)) {
          if (!n.hi_inf && k >= K::view(n.hi) && n.sibling) {
            cur = n.sibling;
            continue;
          }
          restart = true;  // cannot happen with B-link invariants; be safe
          break;
        }
        if (K::is_min(K::view(n.lo)) && !n.hi_inf && n.sibling) refresh_root_if(c, n);
        admit(n);
        size_t p = n.child_pos(k);
        if (n.level == 1) return child_of(n, p, nullptr);
        cur = n.child_at(p);
        lvl = n.level - 1u;
      }
      stats_.retries.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // A cached bottom-level node at `a` was found stale (DMTree's version check): reads it anew,
  // moving right along the level until a node covers k, caches what it read, and returns k's
  // child. Only that level is read: the upper ones did not change with the leaf.
  Located reread_level1(Client<T>& c, View k, GlobalAddress a) {
    for (;;) {
      InternalNode n = read_internal(c, a, 1);
      admit(n);  // replaces the stale copy (same low fence) even when k has moved right of it
      if (n.covers(k)) return child_of(n, n.child_pos(k), nullptr);
      if (n.hi_inf || k < K::view(n.hi) || !n.sibling)
        return locate(c, k);  // k left of it: from the top
      a = n.sibling;
    }
  }

  // Address of some node at `level` whose range starts at or before k (callers move right).
  GlobalAddress locate_level(Client<T>& c, View k, unsigned level) {
    GlobalAddress cur;
    unsigned lvl;
    if (auto n = cache_.find(k, level)) {
      if (n->level == level) return n->addr;
      cur = n->child_at(n->child_pos(k));
      lvl = n->level - 1u;
    } else {
      RootWord rw = root(c);
      cur = rw.addr;
      lvl = rw.level;
      if (lvl < level) throw Error("locate_level above the root");
    }
    while (lvl > level) {
      InternalNode n = read_internal(c, cur, lvl);
      if (!n.covers(k) && !n.hi_inf && k >= K::view(n.hi) && n.sibling) {
        cur = n.sibling;
        continue;
      }
      admit(n);
      cur = n.child_at(n.child_pos(k));
      --lvl;
    }
    return cur;
  }

  // The node at `a`, whose level is `level` (it decides the image's size: tagged or not).
  InternalNode read_internal(Client<T>& c, GlobalAddress a, unsigned level) {
    std::vector<uint64_t> w(image_bytes(level) / 8);
    for (;;) {
      c.read(a + 8, w.data(), static_cast<uint32_t>(w.size() * 8), flushes_.node_read);
      stats_.internal_reads.fetch_add(1, std::memory_order_relaxed);
      if (auto n = InternalNode::decode(a, w.data(), fanout_, w.size(), keys_)) return *n;
      stats_.retries.fetch_add(1, std::memory_order_relaxed);
      c.pause();  // torn by a concurrent node write: read again
    }
  }

  // --- separator insertion (up-propagation)
  // ---------------------------------------------------------- After a node at level-1 split into
  // `left` and `right` at `sep`, insert (sep, right) at `level`; splits propagate upward; a split
  // root is replaced through a CAS on the root word. In a tagged bottom level, the new entry
  // carries `right_tag` and left's entry takes `left_tag` unless it holds a newer one.
  void insert_separator(Client<T>& c, unsigned level, View sep, GlobalAddress right,
                        GlobalAddress left, uint64_t right_tag = 0, uint64_t left_tag = 0) {
    KeyT pivot;  // owns sep once it is a pivot of a split internal node
    for (;;) {
      if (cached_height() < level) {
        RootWord rw = read_root(c);
        if (rw.level < level) {
          if (rw.addr != left) {  // the root's splitter installs the new root; wait for it
            c.pause();
            continue;
          }
          InternalNode r;
          r.level = static_cast<uint8_t>(level);
          r.lo = KeyT{};
          r.hi_inf = true;
          r.leftmost = left;
          r.keys = {KeyT(sep)};
          r.children = {right};
          if (tagged(level)) {
            r.tagged = true;
            r.leftmost_tag = left_tag;
            r.tags = {right_tag};
          }
          r.addr = c.alloc(InternalNode::remote_bytes(fanout_, r.tagged, keys_.words()), 64);
          write_whole(c, r, /*locked=*/false);
          RootWord nw{static_cast<uint8_t>(level), r.addr};
          if (c.cas(root_slot_, rw.raw(), nw.raw()) == rw.raw()) {
            remember_root(nw);
            admit(r);
            stats_.root_grows.fetch_add(1, std::memory_order_relaxed);
            return;
          }
          continue;  // someone else grew the tree (cannot, as only we own `left`; be safe)
        }
      }
      GlobalAddress a = locate_level(c, sep, level);
      for (;;) {
        InternalNode n = lock_and_read(c, a, level);
        // Until the node is written back (which unlocks it), an error (pool exhausted) releases
        // the lock so that other clients see their own error instead of waiting forever.
        UnlockOnError held(*this, c, a);
        if (!n.covers(sep)) {
          held.dismiss();
          unlock(c, a);
          if (!n.hi_inf && sep >= K::view(n.hi) && n.sibling) {
            a = n.sibling;
            continue;
          }
          throw Error("separator insertion reached a node left of its key");
        }
        size_t p = n.child_pos(sep);
        if (p > 0 && K::view(n.keys[p - 1]) == sep) {  // already there (retried propagation)
          held.dismiss();
          unlock(c, a);
          return;
        }
        n.insert_entry(p, sep, right, right_tag);
        if (n.tagged) {
          size_t lp = n.child_at(p) == left ? p : n.position_of(left);
          if (lp <= n.count() && InternalNode::tag_newer(left_tag, n.child_tag(lp)))
            n.set_child_tag(lp, left_tag);
        }
        ++n.nv;
        if (n.count() <= fanout_) {
          held.dismiss();
          write_whole(c, n, true);
          admit(n);
          return;
        }
        // Split: right half to a new node, written first so it is complete before it is reachable.
        size_t m = n.count() / 2;
        InternalNode r;
        r.level = n.level;
        r.lo = n.keys[m];
        r.hi = n.hi;
        r.hi_inf = n.hi_inf;
        r.sibling = n.sibling;
        r.sibling_leftmost = n.sibling_leftmost;
        r.leftmost = n.children[m];
        r.keys.assign(n.keys.begin() + m + 1, n.keys.end());
        r.children.assign(n.children.begin() + m + 1, n.children.end());
        if (n.tagged) {
          r.tagged = true;
          r.leftmost_tag = n.tags[m];
          r.tags.assign(n.tags.begin() + m + 1, n.tags.end());
          n.tags.resize(m);
        }
        r.addr = c.alloc(InternalNode::remote_bytes(fanout_, r.tagged, keys_.words()), 64);
        KeyT mid = std::move(n.keys[m]);
        n.keys.resize(m);
        n.children.resize(m);
        n.hi = mid;
        n.hi_inf = false;
        n.sibling = r.addr;
        n.sibling_leftmost = r.leftmost;
        write_whole(c, r, false);
        held.dismiss();
        write_whole(c, n, true);
        admit(r);
        admit(n);
        stats_.internal_splits.fetch_add(1, std::memory_order_relaxed);
        pivot = std::move(mid);
        sep = K::view(pivot);
        right = r.addr;
        left = a;
        right_tag = left_tag = 0;
        ++level;
        break;
      }
    }
  }

  // Locks the bottom-level node covering k (moving right along the level) and lets `edit(node&)`
  // change it under the lock, which it may hold across its own verbs; when edit returns true the
  // node is written back (unlocked in the same batch), else only unlocked. False when the tree
  // has no internal level or edit declined.
  template <class F>
  bool edit_level1(Client<T>& c, View k, F&& edit) {
    if (cached_height() < 1 && read_root(c).level < 1) return false;
    GlobalAddress a = locate_level(c, k, 1);
    for (;;) {
      InternalNode n = lock_and_read(c, a, 1);
      UnlockOnError held(*this, c, a);
      if (!n.covers(k)) {
        held.dismiss();
        unlock(c, a);
        if (!n.hi_inf && k >= K::view(n.hi) && n.sibling) {
          a = n.sibling;
          continue;
        }
        throw Error("edit_level1 reached a node left of its key");
      }
      bool write = edit(n);
      held.dismiss();
      if (!write) {
        unlock(c, a);
        admit(n);
        return false;
      }
      ++n.nv;
      write_whole(c, n, true);
      admit(n);
      return true;
    }
  }

  NodeCache& cache() { return cache_; }
  const NodeCache& cache() const { return cache_; }
  const CoreStats& stats() const { return stats_; }
  uint32_t fanout() const { return fanout_; }
  GlobalAddress root_slot() const { return root_slot_; }

 private:
  // Releases an internal node's lock when the scope is left by an exception before dismiss().
  class UnlockOnError {
   public:
    UnlockOnError(BTreeCore& core, Client<T>& c, GlobalAddress a) : core_(core), c_(c), a_(a) {}
    UnlockOnError(const UnlockOnError&) = delete;
    UnlockOnError& operator=(const UnlockOnError&) = delete;
    ~UnlockOnError() {
      if (!armed_) return;
      try {
        core_.unlock(c_, a_);
      } catch (...) {  // the transport failed: the original error is the one to report
      }
    }
    void dismiss() { armed_ = false; }

   private:
    BTreeCore& core_;
    Client<T>& c_;
    GlobalAddress a_;
    bool armed_ = true;
  };

  void remember_root(RootWord rw) {
    uint64_t cur = root_raw_.load(std::memory_order_relaxed);
    // Heights only grow: never replace a higher root by a lower (older) one.
    while (cur == 0 || RootWord::from_raw(cur).level <= rw.level) {
      if (root_raw_.compare_exchange_weak(cur, rw.raw(), std::memory_order_acq_rel)) return;
    }
  }
  void refresh_root_if(Client<T>& c, const InternalNode& n) {
    RootWord cached = RootWord::from_raw(root_raw_.load());
    if (cached.addr == n.addr) read_root(c);  // our root split: learn the new one
  }

  // Lock word CAS and node READ in one batch (Sherman's combined command); with the local lock
  // table a handed-over lock needs only the READ.
  InternalNode lock_and_read(Client<T>& c, GlobalAddress a, unsigned level) {
    bool handed = llt_ && llt_->acquire(c, a);
    std::vector<uint64_t> w(image_bytes(level) / 8);
    HolderWatch watch;
    uint64_t expect = 0;  // free; or the word a dead holder left, to take over
    for (;;) {
      uint64_t old = 0;
      Batch b;
      if (!handed) b.cas(a, expect, uint64_t{c.id()} + 1, &old);
      b.read(a + 8, w.data(), static_cast<uint32_t>(w.size() * 8)).hint(flushes_.node_read);
      c.run(b);
      if (handed || old == expect) {
        if (expect != 0) stats_.takeovers.fetch_add(1, std::memory_order_relaxed);
        // Taken from a dead holder: a node it rewrote whole stands; one it left half written
        // fails its checksum, as a corrupt one does.
        auto n = InternalNode::decode(a, w.data(), fanout_, w.size(), keys_);
        if (!n) {
          unlock(c, a);
          throw Error("internal node " + a.to_string() + " is corrupt under its lock" +
                      (expect ? " (taken from client " + std::to_string(expect - 1) +
                                    ", whose process died holding it)"
                              : std::string()));
        }
        return *n;
      }
      // A holder whose process was declared dead and fenced never lets go: take it over.
      expect = old != 0 && watch.dead(c, old, static_cast<uint32_t>(old - 1)) ? old : 0;
      if (expect == 0) c.pause();
    }
  }
  void unlock(Client<T>& c, GlobalAddress a) {
    Batch b;
    finish(c, a, b);
  }
  // Runs `b` and releases the lock of `a` (combined into the same batch unless handed over).
  void finish(Client<T>& c, GlobalAddress a, Batch& b) {
    bool hand = llt_ && llt_->should_hand_over(a);
    static const uint64_t kZero = 0;
    if (!hand) b.release(a, &kZero, 8);
    if (!b.empty()) c.run(b);
    if (llt_) llt_->release(a, hand);
  }
  // Node write: a locked node is rewritten and unlocked in one batch; a new node (not yet
  // reachable, lock never taken) is written with a free lock word.
  void write_whole(Client<T>& c, const InternalNode& n, bool locked) {
    std::vector<uint64_t> w = n.encode(fanout_, keys_);
    Batch b;
    if (!locked) {
      w.insert(w.begin(), 0);
      b.write(n.addr, w.data(), static_cast<uint32_t>(w.size() * 8)).hint(flushes_.node_write);
      c.run(b);
      return;
    }
    b.write(n.addr + 8, w.data(), static_cast<uint32_t>(w.size() * 8)).hint(flushes_.node_write);
    finish(c, n.addr, b);
  }

  // Child p of bottom-level node n; `cached` is n's cache entry when it came from the cache.
  static Located child_of(const InternalNode& n, size_t p, typename NodeCache::NodePtr cached) {
    Located l{n.child_at(p), n.next_of(p), cached != nullptr, std::move(cached)};
    if (n.tagged) {
      l.tagged = true;
      l.tag = n.child_tag(p);
    }
    return l;
  }
  bool tagged(unsigned level) const { return tag_level1_ && level == 1; }
  uint64_t image_bytes(unsigned level) const {
    return InternalNode::image_bytes(fanout_, tagged(level), keys_.words());
  }

  // Every node read or written goes through here into the cache, if its level is cached.
  void admit(const InternalNode& n) {
    if (cached_levels_ == 0 || n.level <= cached_levels_) cache_.put(n);
  }

  K keys_;
  GlobalAddress root_slot_;
  uint32_t fanout_;
  NodeCache cache_;
  LocalLockTable* llt_;
  unsigned cached_levels_;
  bool tag_level1_;
  std::atomic<uint64_t> root_raw_{0};
  CoreFlushes flushes_;
  CoreStats stats_;
};

}  // namespace dmrt::btree
