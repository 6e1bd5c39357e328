// SMART (OSDI '23): an adaptive radix tree on disaggregated memory with lock-free inner nodes,
// lock-based in-place leaves, read delegation / write combining and a compute-side node cache.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmrt/indexes/common/faults.h"
#include "dmrt/indexes/common/rdwc.h"
#include "dmrt/indexes/smart/detail/cache.h"
#include "dmrt/indexes/smart/detail/layout.h"
#include "dmrt/indexes/smart/detail/options.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/liveness.h"

namespace dmrt::smart {

// One Tree object per compute node: create() on the first, attach() on every other one. It holds
// the node's inner-node cache and its read-delegation/write-combining slots. The remote tree is
// shared: a fixed Node256 root, found through a descriptor named by a root slot word.
template <Transport T>
class Tree : public std::enable_shared_from_this<Tree<T>> {
 public:
  using Options = smart::Options;
  class Handle;
  static constexpr uint64_t kMagic = 0x5452414d53524d44ull;  // "DMRSMART"

  [[gnu::noinline]] static std::shared_ptr<Tree> create(Client<T>& c, const Options& o) {
    validate(o);
    NodeId mem0 = first_memory_node(c);
    GlobalAddress root = c.alloc_on(mem0, kNodeBytes, 64);
    if (!root) throw PoolExhausted("smart: no room for the root node");
    std::vector<uint64_t> img(1 + kMaxSlots, 0);
    img[0] = Header::make(0, kNode256, nullptr, 0).w;
    // Setup's WRITEs are written back, attach's READs invalidate, whatever the flush points.
    c.write(root, img.data(), kNodeBytes, FlushHint::kWriteBack);
    GlobalAddress meta = c.alloc_on(mem0, 64, 64);
    uint64_t m[4] = {kMagic, uint64_t{o.key_size} << 32 | o.value_size,
                     Slot::make(0, false, kNode256, root).w, 0};
    c.write(meta, m, sizeof(m), FlushHint::kWriteBack);
    uint64_t raw = meta.raw();
    c.write(layout::root_slot(mem0, o.root_slot), &raw, 8, FlushHint::kWriteBack);
    auto t = std::shared_ptr<Tree>(new Tree(c, o, meta, Slot{m[2]}));
    t->nodes_ = 1;  // the root
    return t;
  }

  [[gnu::noinline]] static std::shared_ptr<Tree> attach(Client<T>& c, const Options& o) {
    validate(o);
    NodeId mem0 = first_memory_node(c);
    auto meta = GlobalAddress::from_raw(c.template read_value<uint64_t>(
        layout::root_slot(mem0, o.root_slot), FlushHint::kInvalidate));
    if (!meta) throw ConfigError("smart: no tree at root slot " + std::to_string(o.root_slot));
    uint64_t m[4];
    c.read(meta, m, sizeof(m), FlushHint::kInvalidate);
    if (m[0] != kMagic) throw ConfigError("smart: root slot does not name a SMART tree");
    if (m[1] != (uint64_t{o.key_size} << 32 | o.value_size))
      throw ConfigError("smart: the tree was created with another key or value size");
    return std::shared_ptr<Tree>(new Tree(c, o, meta, Slot{m[2]}));
  }

  Handle handle(Client<T>& c) { return Handle(this->shared_from_this(), c); }

  IndexStats stats(Client<T>&) { return stats(); }
  [[gnu::noinline]] IndexStats stats() const {
    IndexStats s{{"inner_nodes", static_cast<double>(nodes_.load())},
                 {"leaf_splits", static_cast<double>(leaf_splits_.load())},
                 {"prefix_splits", static_cast<double>(prefix_splits_.load())},
                 {"type_switches", static_cast<double>(type_switches_.load())},
                 {"cas_failures", static_cast<double>(cas_failures_.load())},
                 {"stale_cache_entries", static_cast<double>(stale_.load())},
                 {"leaf_retries", static_cast<double>(leaf_retries_.load())},
                 {"lock_retries", static_cast<double>(lock_retries_.load())},
                 {"locks_taken_over", static_cast<double>(takeovers_.load())},
                 {"rcu_updates", static_cast<double>(rcu_updates_.load())},
                 {"cache_hits", static_cast<double>(cache_.hits())},
                 {"cache_misses", static_cast<double>(cache_.misses())},
                 {"cache_bytes", static_cast<double>(cache_.used_bytes())},
                 {"cache_entries", static_cast<double>(cache_.entries())},
                 {"cache_evictions", static_cast<double>(cache_.evictions())},
                 {"cache_invalidations", static_cast<double>(cache_.invalidations())}};
    rcomb_.add_stats(s);
    wcomb_.add_stats(s);
    return s;
  }
  uint64_t cache_bytes() const { return cache_.used_bytes(); }
  const Options& options() const { return opts_; }
  const NodeCache& cache() const { return cache_; }

 private:
  Tree(Client<T>& c, const Options& o, GlobalAddress meta, Slot root)
      : opts_(o),
        geo_{o.key_size, o.value_size},
        root_slot_(meta + 16),
        root_(root),
        home_(c.home_node()),
        cache_(o.cache_bytes),
        rcomb_(rdwc::Combiner::kSlots, rdwc::Combiner::kLimit),
        wcomb_(rdwc::Combiner::kSlots, rdwc::Combiner::kLimit) {}

  static void validate(const Options& o) {
    if (o.key_size < kIntegerKeyBytes || o.key_size > kMaxKeyBytes)
      throw ConfigError("smart: key_size must be in 8.." + std::to_string(kMaxKeyBytes));
    if (o.value_size == 0 || o.value_size > 4096)
      throw ConfigError("smart: value_size must be in 1..4096");
  }
  static NodeId first_memory_node(Client<T>& c) {
    auto m = c.memory_nodes();
    if (m.empty()) throw ConfigError("smart: the cluster has no memory node");
    return m.front();
  }

  const Options opts_;
  const LeafGeometry geo_;
  const GlobalAddress root_slot_;  // the descriptor word holding the root's slot
  const Slot root_;
  const NodeId home_;
  NodeCache cache_;
  rdwc::Combiner rcomb_, wcomb_;
  mutable std::atomic<uint64_t> nodes_{0}, leaf_splits_{0}, prefix_splits_{0}, type_switches_{0},
      cas_failures_{0}, stale_{0}, leaf_retries_{0}, lock_retries_{0}, rcu_updates_{0},
      takeovers_{0};

 public:
  // One client's view. Not shared between fibers.
  class Handle {
   public:
    Handle(std::shared_ptr<Tree> t, Client<T>& c)
        : t_(std::move(t)), c_(&c), g_(t_->geo_), leaf_(g_.words()), image_(g_.words()) {
      if (c.home_node() != t_->home_)
        throw ConfigError("smart: a client homed on node " + std::to_string(c.home_node()) +
                          " needs the Tree of that compute node (attach one there)");
    }

    [[gnu::noinline]] bool search(Key k, std::string& out) {
      return search_key(KeyBytes(k, g_.key_size), out);
    }
    [[gnu::noinline]] bool insert(Key k, std::string_view v) {
      check_value(v);
      return write_op(KeyBytes(k, g_.key_size), v, Op::kInsert);
    }
    [[gnu::noinline]] bool update(Key k, std::string_view v) {
      return update_key(KeyBytes(k, g_.key_size), v);
    }
    [[gnu::noinline]] bool remove(Key k) {
      return write_op(KeyBytes(k, g_.key_size), {}, Op::kRemove);
    }

    // Byte keys (dmrt/runtime/key_bytes.h): 1..key_size bytes; a key_size 8 tree takes 8-byte keys.
    [[gnu::noinline]] bool search(KeyView k, std::string& out) {
      return search_key(KeyBytes(checked(k), g_.key_size), out);
    }
    [[gnu::noinline]] bool insert(KeyView k, std::string_view v) {
      check_value(v);
      return write_op(KeyBytes(checked(k), g_.key_size), v, Op::kInsert);
    }
    [[gnu::noinline]] bool update(KeyView k, std::string_view v) {
      return update_key(KeyBytes(checked(k), g_.key_size), v);
    }
    [[gnu::noinline]] bool remove(KeyView k) {
      return write_op(KeyBytes(checked(k), g_.key_size), {}, Op::kRemove);
    }

    // Keys >= from in order: a depth-first walk over the nodes, children in byte order, the leaves
    // of one node read in one round trip. Not atomic across nodes (as the paper's range query).
    // On a tree with key_size > 8, the integer scan returns only the 8-byte keys.
    [[gnu::noinline]] void scan(Key from, size_t count,
                                std::vector<std::pair<Key, std::string>>& rows) {
      rows.clear();
      if (count == 0) return;
      KeyBytes fb(from, g_.key_size);
      KeyRows sink{rows, count, g_.value_size};
      scan_from(fb, sink);
    }
    [[gnu::noinline]] void scan(KeyView from, size_t count,
                                std::vector<std::pair<std::string, std::string>>& rows) {
      rows.clear();
      // An empty `from` starts at the smallest key.
      KeyBytes fb(from.empty() && g_.key_size > kIntegerKeyBytes ? from : checked(from),
                  g_.key_size);
      if (count == 0) return;
      ByteRows sink{rows, count, g_.value_size};
      scan_from(fb, sink);
    }

   private:
    enum class Op { kInsert, kUpdate, kRemove };

    // Where a traversal stands: slot `slot` (null for a node reached through the cache) holds
    // `e`, which points to what hangs below key byte depth - 1. `from`: the cached node e was
    // taken from, if any.
    struct Cursor {
      Cursor() = default;
      Cursor(GlobalAddress s, Slot v, unsigned d, NodeCache::NodePtr f, GlobalAddress ps = {},
             Slot pe = {})
          : slot(s), e(v), depth(d), from(std::move(f)), parent_slot(ps), parent_entry(pe) {}
      GlobalAddress slot;
      Slot e;
      unsigned depth = 0;
      NodeCache::NodePtr from;
      // A node cursor (slot null): the parent slot it was last seen through, for type switches.
      GlobalAddress parent_slot;
      Slot parent_entry;
    };
    enum class At { kLeaf, kNoChild, kMismatch };
    struct Found {
      At at = At::kLeaf;
      Cursor cur;
      bool match = false;     // kLeaf: the leaf holds the key (its image is in leaf_)
      Header hdr;             // kNoChild / kMismatch: the node's header (slots in nbuf_)
      unsigned n = 0;         // slots of nbuf_ that are valid
      unsigned mismatch = 0;  // kMismatch: the key position where the prefix differs
    };
    // An inner node without a child for the key byte at `pos`, as last seen.
    struct Gap {
      GlobalAddress node;
      GlobalAddress parent_slot;
      Slot parent_entry;
      const uint64_t* slots;
      unsigned n;
      unsigned pos;
      NodeCache::NodePtr from;  // the cached node the slots come from (null: just read)
    };

    KeyView checked(KeyView k) const {
      if (g_.key_size == kIntegerKeyBytes ? k.size() != kIntegerKeyBytes
                                          : k.empty() || k.size() > g_.key_size)
        throw LimitError("smart: a key of " + std::to_string(k.size()) +
                         " bytes on a tree of key_size " + std::to_string(g_.key_size) +
                         (g_.key_size == kIntegerKeyBytes ? " (8-byte keys only)" : ""));
      return k;
    }
    bool search_key(const KeyBytes& kb, std::string& out) {
      if (t_->opts_.read_delegation) {
        auto direct = [&](std::string_view, std::string* o) { return search_direct(kb, *o); };
        // Same-key searches share a round: by the integer at key_size 8, by the exact bytes above.
        if (g_.key_size == kIntegerKeyBytes)
          return t_->rcomb_.run(*c_, key_of_bytes(kb.raw()), false, {}, &out, direct);
        return t_->rcomb_.run(*c_, kb.raw(), false, {}, &out, direct);
      }
      return search_direct(kb, out);
    }
    bool update_key(const KeyBytes& kb, std::string_view v) {
      check_value(v);
      if (t_->opts_.write_combining) {
        auto direct = [&](std::string_view wv, std::string*) {
          return write_op(kb, wv, Op::kUpdate);
        };
        if (g_.key_size == kIntegerKeyBytes)
          return t_->wcomb_.run(*c_, key_of_bytes(kb.raw()), true, v, nullptr, direct);
        return t_->wcomb_.run(*c_, kb.raw(), true, v, nullptr, direct);
      }
      return write_op(kb, v, Op::kUpdate);
    }

    void check_value(std::string_view v) const {
      if (v.size() > g_.value_size)
        throw LimitError("smart: value of " + std::to_string(v.size()) +
                         " bytes exceeds value_size " + std::to_string(g_.value_size));
    }

    Cursor root_cursor() const { return {t_->root_slot_, t_->root_, 0, nullptr}; }

    // The deepest cached node on the key's path: a slot of it when the key's byte has one, else
    // the node itself (from = that node, slot = null).
    Cursor start(const KeyBytes& kb) {
      if (!t_->opts_.cache) return root_cursor();
      auto n = t_->cache_.find(kb.view(g_.encoded() - 1));
      if (!n) return root_cursor();
      uint8_t b = kb[n->pos];
      for (unsigned i = 0; i < n->size(); ++i) {
        Slot s{n->slot(i)};
        if (!s.empty() && s.partial() == b) return {slot_addr(n->addr, i), s, n->pos + 1, n};
      }
      return {GlobalAddress(), Slot::make(0, false, n->type, n->addr), n->pos, n, n->parent_slot,
              n->parent_entry};
    }

    static GlobalAddress slot_addr(GlobalAddress node, unsigned i) { return node + 8 + 8ull * i; }
    // The hint flush point `p` issues (none when a test switched the point off).
    FlushHint hint(FlushPoint p, FlushHint h) const {
      return flush_hint(t_->opts_.faults.skip_flush, p, h);
    }

    // What `cur` points to was replaced (a leaf split or a prefix split): read its slot again,
    // and let the cached node it came from learn the new value.
    void stale(const KeyBytes& kb, Cursor& cur) {
      t_->stale_.fetch_add(1, std::memory_order_relaxed);
      if (!cur.slot) {
        if (cur.from) t_->cache_.invalidate(kb.view(cur.from->pos), cur.from);
        cur = root_cursor();
        return;
      }
      cur.e = Slot{c_->template read_value<uint64_t>(
          cur.slot, hint(FlushPoint::kNodeInvalidate, FlushHint::kInvalidate))};
      learn(cur.from, cur.slot, cur.e.w);
      cur.from = nullptr;
    }
    NodeCache::NodePtr cached(const KeyBytes& kb, unsigned path) const {
      return t_->opts_.cache ? t_->cache_.find_exact(kb.view(path)) : nullptr;
    }
    static void learn(const NodeCache::NodePtr& n, GlobalAddress slot, uint64_t v) {
      if (!n || slot.node() != n->addr.node() || slot.offset() < n->addr.offset() + 8) return;
      uint64_t i = (slot.offset() - n->addr.offset() - 8) / 8;
      if (i < n->size()) n->learn(static_cast<unsigned>(i), v);
    }

    // Reads a leaf until its checksum holds (a read overlapping an in-place write fails it).
    // A leaf whose checksum fails is being written: read again. One that a dead process left
    // half written under its lock never heals: an error naming it.
    void read_leaf(GlobalAddress a) {
      HolderWatch watch;
      for (;;) {
        c_->read(a, leaf_.data(), g_.bytes(),
                 hint(FlushPoint::kLeafInvalidate, FlushHint::kInvalidate));
        if (leaf_checksum(leaf_.data(), g_.words()) == leaf_[1]) return;
        t_->leaf_retries_.fetch_add(1, std::memory_order_relaxed);
        if (dead_holder(watch, leaf_[0])) throw torn(a, leaf_[0]);
        c_->pause();
      }
    }
    // The status names a holder (lock or obsolete mark) whose process was declared dead and
    // fenced, once the same status has stood for the watch's lease.
    bool dead_holder(HolderWatch& watch, uint64_t st) {
      const int64_t owner = leaf_owner(st);
      return (st & (kLocked | kObsolete)) && owner >= 0 &&
             watch.dead(*c_, st, static_cast<uint32_t>(owner));
    }
    Error torn(GlobalAddress a, uint64_t st) const {
      return Error("smart: leaf " + a.to_string() + " was left half written by client " +
                   std::to_string(leaf_owner(st)) + ", whose process died holding its lock");
    }
    const uint8_t* leaf_key() const { return reinterpret_cast<const uint8_t*>(&leaf_[2]); }
    // The key of leaf_ holds kb: the same padded bytes and (key_size > 8) the same length.
    bool leaf_key_is(const KeyBytes& kb) const {
      return std::memcmp(leaf_key(), kb.b, g_.key_size) == 0 &&
             leaf_key_len(leaf_[0], g_.key_size) == kb.len;
    }

    // Header and the slots the type says (the rest too when the header's type is larger).
    Header read_node(GlobalAddress a, unsigned type) {
      unsigned n = kTypeSlots[type];
      c_->read(a, nbuf_.data(), 8 + 8 * n,
               hint(FlushPoint::kNodeInvalidate, FlushHint::kInvalidate));
      Header h{nbuf_[0]};
      if (h.type() > type) {
        unsigned m = kTypeSlots[h.type()];
        c_->read(a + 8 + 8ull * n, &nbuf_[1 + n], 8 * (m - n),
                 hint(FlushPoint::kNodeInvalidate, FlushHint::kInvalidate));
      }
      return h;
    }

    // `inserting`: a leaf with another key reached through a cached slot is returned as is (the
    // split's CAS on that slot checks that it still holds it); others ask the slot again.
    Found walk(const KeyBytes& kb, Cursor cur, bool inserting = false) {
      for (;;) {
        if (cur.e.leaf()) {
          read_leaf(cur.e.addr());
          if (leaf_[0] & kObsolete) {  // rcu: replaced (or being replaced): ask the slot again
            if (dead_holder(obsolete_watch_, leaf_[0])) revive(cur);
            c_->pause();
            stale(kb, cur);
            continue;
          }
          bool match = leaf_key_is(kb);
          if (!match && cur.from && !inserting) {  // the slot may since hold a node: ask it
            stale(kb, cur);
            continue;
          }
          Found f;
          f.at = At::kLeaf;
          f.cur = cur;
          f.match = match;
          return f;
        }
        unsigned st = cur.e.type();
        Header h = read_node(cur.e.addr(), st);
        unsigned type = std::max(h.type(), st);
        if (cur.from && cur.slot && h.type() > st)
          learn(cur.from, cur.slot, cur.e.with_type(h.type()).w);
        if (h.depth() > cur.depth) {  // a prefix split moved the node below a new parent
          stale(kb, cur);
          continue;
        }
        for (unsigned i = cur.depth - h.depth(); i < h.len(); ++i)
          if (kb[h.depth() + i] != h.prefix(i)) {
            Found f;
            f.at = At::kMismatch;
            f.cur = cur;
            f.hdr = h;
            f.n = kTypeSlots[type];
            f.mismatch = h.depth() + i;
            return f;
          }
        unsigned pos = h.pos();
        unsigned n = kTypeSlots[type];
        if (t_->opts_.cache) remember(kb, cur, pos, type, !cur.slot && cur.from);
        uint8_t b = kb[pos];
        bool next = false;
        for (unsigned i = 0; i < n; ++i) {
          Slot s{nbuf_[1 + i]};
          if (!s.empty() && s.partial() == b) {
            cur = {slot_addr(cur.e.addr(), i), s, pos + 1, nullptr};
            next = true;
            break;
          }
        }
        if (next) continue;
        Found f;
        f.at = At::kNoChild;
        f.cur = cur;
        f.hdr = h;
        f.n = n;
        f.mismatch = pos;
        return f;
      }
    }

    // Caches the node just read (nbuf_): when its path has no entry, or to refresh the entry
    // the traversal started from.
    void remember(const KeyBytes& kb, const Cursor& cur, unsigned pos, unsigned type,
                  bool replace) {
      auto path = kb.view(pos);
      if (!replace && t_->cache_.find_exact(path)) return;
      auto n = std::make_shared<NodeCache::Node>(cur.e.addr(), type, &nbuf_[1]);
      n->parent_slot = cur.slot ? cur.slot : cur.parent_slot;
      n->parent_entry = cur.slot ? cur.e : cur.parent_entry;
      n->pos = pos;
      t_->cache_.put(path, std::move(n));
    }

    bool search_direct(const KeyBytes& kb, std::string& out) {
      Found f = walk(kb, start(kb));
      if (f.at != At::kLeaf || !f.match || !(leaf_[0] & kPresent)) return false;
      out.assign(reinterpret_cast<const char*>(&leaf_[2 + g_.key_words()]), g_.value_size);
      return true;
    }

    bool write_op(const KeyBytes& kb, std::string_view v, Op op) {
      Cursor cur = start(kb);
      pending_leaf_ = GlobalAddress();
      leaf_written_ = leaf_published_ = false;
      bool ok = false;
      for (;;) {
        if (op == Op::kInsert && !cur.slot && cur.from) {
          // Insert into the cached node without reading it (§4.2: CAS an empty slot).
          NodeCache::NodePtr n = cur.from;
          if (injected(static_cast<bool>(t_->opts_.faults.between_cached_look_and_copy)))
            t_->opts_.faults.between_cached_look_and_copy();
          for (unsigned i = 0; i < n->size(); ++i) gbuf_[i] = n->slot(i);
          Gap g{n->addr, n->parent_slot, n->parent_entry, gbuf_.data(), n->size(), n->pos, n};
          if (place(kb, v, g, cur)) {
            ok = true;
            break;
          }
          continue;
        }
        Found f = walk(kb, cur, op == Op::kInsert);
        if (f.at == At::kLeaf && f.match) {
          const int r = leaf_op(f.cur, v, op);
          if (r < 0) {  // rcu: the leaf was replaced since it was read
            cur = f.cur;
            stale(kb, cur);
            continue;
          }
          ok = r > 0;
          break;
        }
        if (op != Op::kInsert) break;  // absent
        if (f.at == At::kLeaf) {
          KeyBytes other(leaf_key(), leaf_key_len(leaf_[0], g_.key_size), g_.key_size);
          if (split(kb, v, f.cur, other.b, f.cur.depth, true)) {
            ok = true;
            break;
          }
          cur = f.cur;
          continue;
        }
        if (f.at == At::kMismatch) {
          if (split(kb, v, f.cur, nullptr, f.mismatch, false, f.hdr)) {
            ok = true;
            break;
          }
          cur = f.cur;
          continue;
        }
        Gap g{f.cur.e.addr(),
              f.cur.slot ? f.cur.slot : f.cur.parent_slot,
              f.cur.slot ? f.cur.e : f.cur.parent_entry,
              &nbuf_[1],
              f.n,
              f.mismatch,
              nullptr};
        // place() may walk on from a slot another insert filled: it reuses nbuf_ only after
        // it is done with g.slots.
        if (place(kb, v, g, cur)) {
          ok = true;
          break;
        }
      }
      if (pending_leaf_ && !leaf_published_) spare_leaves_.push_back(pending_leaf_);
      return ok;
    }

    // The present bit and value of a leaf that holds the key, under its lock (§4.2: leaves are
    // updated in place), or with rcu an update out of place (rcu_update). leaf_ holds a
    // consistent image on entry. 1: done, 0: nothing to do, -1: the leaf is obsolete (rcu).
    int leaf_op(const Cursor& cur, std::string_view v, Op op) {
      const GlobalAddress a = cur.e.addr();
      if (op == Op::kUpdate && t_->opts_.rcu) return rcu_update(cur, v);
      const uint64_t mine = leaf_owner_bits(c_->id());
      HolderWatch watch;
      for (;;) {
        uint64_t st = leaf_[0];
        bool present = st & kPresent;
        if (st & kObsolete) return -1;
        if (op == Op::kInsert ? present : !present) return 0;
        if (st & kLocked) {
          if (take_dead_lock(watch, a, st)) {
            st = leaf_[0];
            present = st & kPresent;
            if (op == Op::kInsert ? present : !present) {
              uint64_t back = st & ~(kLocked | kOwnerMask);
              c_->release(a, &back, 8);
              return 0;
            }
          } else {
            t_->lock_retries_.fetch_add(1, std::memory_order_relaxed);
            c_->pause();
            read_leaf(a);
            continue;
          }
        } else if (c_->cas(a, st, st | kLocked | mine) != st) {
          t_->lock_retries_.fetch_add(1, std::memory_order_relaxed);
          read_leaf(a);
          continue;
        }
        image_ = leaf_;
        image_[0] = (st & kLenMask) | (op == Op::kRemove ? 0 : kPresent);  // unlocked
        if (op != Op::kRemove) fill_value(image_.data(), v);
        image_[1] = leaf_checksum(image_.data(), g_.words());
        c_->release(a, image_.data(), g_.bytes(), LockWord::kFirst,  // status word: unlocked
                    hint(FlushPoint::kLeafWriteBack, FlushHint::kWriteBack));
        return 1;
      }
    }

    // A holder of leaf `a`'s lock (status `st`) whose process was declared dead and fenced
    // never lets go: its lock is taken by a CAS from exactly the status it left (one waiter
    // wins), and the leaf is read again into leaf_, still locked, now by this client. The dead
    // holder's write back (data words, then the status, LockWord::kFirst) either never began or
    // ended before the status: the leaf is whole and is what it left; else an error naming it.
    // False: the holder is alive (or not yet known dead), or another waiter took the lock.
    bool take_dead_lock(HolderWatch& watch, GlobalAddress a, uint64_t st) {
      if (!dead_holder(watch, st) ||
          c_->cas(a, st, (st & ~kOwnerMask) | leaf_owner_bits(c_->id())) != st)
        return false;
      t_->takeovers_.fetch_add(1, std::memory_order_relaxed);
      c_->read(a, leaf_.data(), g_.bytes(),
               hint(FlushPoint::kLeafInvalidate, FlushHint::kInvalidate));
      if (leaf_checksum(leaf_.data(), g_.words()) != leaf_[1]) throw torn(a, st);
      return true;
    }
    // SMART-RCU: leaf `a`, whose status `st` marks it obsolete for a process that died before
    // its slot CAS, made current again by a CAS from exactly that status. The caller has read
    // the slot after the process was fenced and found it still naming `a`: unpublished.
    void revive_leaf(GlobalAddress a, uint64_t st) {
      if (c_->cas(a, st, st & ~(kObsolete | kOwnerMask)) == st)
        t_->takeovers_.fetch_add(1, std::memory_order_relaxed);
    }
    // SMART-RCU: the leaf cur names is marked obsolete by a process that died before its slot
    // CAS (or after it). It is fenced, so the slot as read now is final: if it still names this
    // leaf the replacement was never published, and the leaf is made current again by a CAS
    // from exactly the status the dead process left.
    void revive(const Cursor& cur) {
      if (!cur.slot) return;
      const uint64_t st = leaf_[0];
      const Slot now{c_->template read_value<uint64_t>(
          cur.slot, hint(FlushPoint::kNodeInvalidate, FlushHint::kInvalidate))};
      if (now.w == cur.e.w) revive_leaf(cur.e.addr(), st);  // else published: the new leaf
    }

    // SMART-RCU's update: CAS the old leaf's status from clean to obsolete (the lock: no other
    // writer takes a leaf that is locked or obsolete), write the new leaf, CAS the slot from the
    // old leaf to it. A slot that changed meanwhile (a split put a node there, which names the
    // old leaf) gets the old status back and the update walks again. Readers spin on an obsolete
    // leaf whose slot still names it, so no read returns the old value after the swap.
    int rcu_update(const Cursor& cur, std::string_view v) {
      const GlobalAddress a = cur.e.addr();
      HolderWatch watch;
      for (;;) {
        const uint64_t st = leaf_[0];
        if (st & kObsolete) return -1;
        if (!(st & kPresent)) return 0;
        if (st & kLocked) {
          // An in-place writer (insert, remove) that died holding the lock: take the lock over,
          // let go, and update out of place as usual.
          if (take_dead_lock(watch, a, st)) {
            uint64_t back = leaf_[0] & ~(kLocked | kOwnerMask);
            c_->release(a, &back, 8);
            leaf_[0] = back;
            continue;
          }
          t_->lock_retries_.fetch_add(1, std::memory_order_relaxed);
          c_->pause();
          read_leaf(a);
          continue;
        }
        if (c_->cas(a, st, st | kObsolete | leaf_owner_bits(c_->id())) != st) {
          t_->lock_retries_.fetch_add(1, std::memory_order_relaxed);
          read_leaf(a);
          continue;
        }
        GlobalAddress na;
        if (!spare_leaves_.empty()) {
          na = spare_leaves_.back();
          spare_leaves_.pop_back();
        } else {
          na = c_->alloc(g_.bytes(), 8);
        }
        image_ = leaf_;
        image_[0] = (st & kLenMask) | kPresent;
        fill_value(image_.data(), v);
        image_[1] = leaf_checksum(image_.data(), g_.words());
        const Slot want = Slot::make(cur.e.partial(), true, 0, na);
        std::vector<std::pair<GlobalAddress, std::span<const uint64_t>>> writes{
            {na, {image_.data(), g_.words()}}};
        leaf_written_ = true;  // publish() writes `writes` only
        const uint64_t old = publish(writes, cur.slot, cur.e.w, want.w);
        if (old == cur.e.w) {
          learn(cur.from, cur.slot, want.w);
          t_->rcu_updates_.fetch_add(1, std::memory_order_relaxed);
          return 1;
        }
        uint64_t back = st;  // not replaced: the old leaf is current again (no holder)
        c_->release(a, &back, 8);
        spare_leaves_.push_back(na);
        t_->cas_failures_.fetch_add(1, std::memory_order_relaxed);
        return -1;
      }
    }

    void fill_value(uint64_t* w, std::string_view v) const {
      auto* p = reinterpret_cast<char*>(&w[2 + g_.key_words()]);
      std::memset(p, 0, 8ull * g_.value_words());
      std::memcpy(p, v.data(), v.size());
    }

    bool published() {
      leaf_published_ = true;
      return true;
    }

    // The new leaf of this insert, allocated once and written with the first CAS that needs it.
    GlobalAddress new_leaf(const KeyBytes& kb, std::string_view v) {
      if (pending_leaf_) return pending_leaf_;
      if (!spare_leaves_.empty()) {
        pending_leaf_ = spare_leaves_.back();
        spare_leaves_.pop_back();
      } else {
        pending_leaf_ = c_->alloc(g_.bytes(), 8);
      }
      std::fill(image_.begin(), image_.end(), 0);
      image_[0] = kPresent | leaf_len_bits(kb.len, g_.key_size);
      std::memcpy(&image_[2], kb.b, g_.key_size);
      fill_value(image_.data(), v);
      image_[1] = leaf_checksum(image_.data(), g_.words());
      return pending_leaf_;
    }
    GlobalAddress new_node() {
      t_->nodes_.fetch_add(1, std::memory_order_relaxed);
      if (!spare_nodes_.empty()) {
        GlobalAddress a = spare_nodes_.back();
        spare_nodes_.pop_back();
        return a;
      }
      // Fresh pool memory is zero: a node is written up to its type's slots only, and the slots
      // past them (where it grows in place) stay empty.
      GlobalAddress a = c_->alloc(kNodeBytes, 64);
      return a;
    }

    // Writes `writes` (and the new leaf if not yet written), then CASes `slot` from `expected`
    // to `desired`: one batch when batch_write_cas and all go to one node, else two round trips.
    uint64_t publish(std::vector<std::pair<GlobalAddress, std::span<const uint64_t>>>& writes,
                     GlobalAddress slot, uint64_t expected, uint64_t desired) {
      if (!leaf_written_) writes.push_back({pending_leaf_, {image_.data(), g_.words()}});
      leaf_written_ = true;
      bool one = t_->opts_.batch_write_cas;
      for (auto& [a, w] : writes) one = one && a.node() == slot.node();
      std::array<Batch, 4> bs;
      unsigned used = 0;
      // A batch per node; a long key's chain of prefix nodes may need more than one batch to a
      // node (posted together, in order).
      auto batch_for = [&](NodeId n) -> Batch& {
        for (unsigned i = 0; i < used; ++i)
          if (bs[i].node() == n && bs[i].size() < Batch::kMaxVerbs) return bs[i];
        if (used == bs.size()) {  // more batches than fit: flush
          c_->run(std::span<Batch>(bs.data(), used));
          for (auto& b : bs) b = Batch();
          used = 0;
        }
        return bs[used++];
      };
      for (auto& [a, w] : writes)
        batch_for(a.node())
            .write(a, w.data(), 8 * w.size())
            .hint(hint(FlushPoint::kPublishWriteBack, FlushHint::kWriteBack));
      uint64_t old = 0;
      if (one) {
        batch_for(slot.node()).cas(slot, expected, desired, &old);
        c_->run(std::span<Batch>(bs.data(), used));
        return old;
      }
      if (used) c_->run(std::span<Batch>(bs.data(), used));
      return c_->cas(slot, expected, desired);
    }

    // Inserts the key's leaf into an empty slot of the node g (first the slots its type holds,
    // then, when they are full, past them: "insert behind", followed by a type switch). Returns
    // false with `cur` set where to walk on when another insert put the key's byte there first.
    bool place(const KeyBytes& kb, std::string_view v, Gap g, Cursor& cur) {
      uint8_t b = kb[g.pos];
      // The snapshot may hold the key's byte already. From the cache it does when another client
      // of this compute node learned a slot between start()'s look for the byte and the copy into
      // gbuf_: skipping that full slot for the first empty one would give the key a second leaf
      // in the node (seen under TSan: one key in slots 147 and 148 of a Node256). Walk on instead.
      for (unsigned i = 0; i < g.n; ++i) {
        Slot s{g.slots[i]};
        if (!s.empty() && s.partial() == b) {
          cur = {slot_addr(g.node, i), s, g.pos + 1, nullptr};
          return false;
        }
      }
      if (!g.from) g.from = cached(kb, g.pos);  // keep this node's cached copy current
      GlobalAddress leaf = new_leaf(kb, v);
      Slot want = Slot::make(b, true, 0, leaf);
      std::vector<std::pair<GlobalAddress, std::span<const uint64_t>>> writes;
      bool any_empty = false;
      for (unsigned i = 0; i < g.n; ++i) {
        if (g.slots[i]) continue;
        any_empty = true;
        writes.clear();
        uint64_t old = publish(writes, slot_addr(g.node, i), 0, want.w);
        if (g.from) g.from->learn(i, old ? old : want.w);
        if (old == 0) return published();
        t_->cas_failures_.fetch_add(1, std::memory_order_relaxed);
        if (Slot{old}.partial() == b) {
          cur = {slot_addr(g.node, i), Slot{old}, g.pos + 1, nullptr};
          return false;
        }
      }
      if (g.from && g.slots == gbuf_.data() && !any_empty) {
        // A full snapshot may be of an older type: read the node, then insert as a traversal
        // from it (a node cursor: its prefix is the path's, already matched).
        cur = {GlobalAddress(), Slot::make(0, false, type_covering(g.n - 1), g.node),
               g.pos,           nullptr,
               g.parent_slot,   g.parent_entry};
        return false;
      }
      for (unsigned i = g.n; i < kMaxSlots; ++i) {
        writes.clear();
        uint64_t old = publish(writes, slot_addr(g.node, i), 0, want.w);
        if (old == 0) {
          raise_type(kb, g, type_covering(i));
          if (g.from) t_->cache_.invalidate(kb.view(g.pos), g.from);  // it grew past the snapshot
          return published();
        }
        t_->cas_failures_.fetch_add(1, std::memory_order_relaxed);
        if (Slot{old}.partial() == b) {
          // Another insert behind, which searches do not see until its inserter raises the
          // type. Raise it first: this insert would otherwise return true (or, for the same key,
          // false) for a key no search finds yet.
          raise_type(kb, g, type_covering(i));
          if (g.from) t_->cache_.invalidate(kb.view(g.pos), g.from);
          cur = {slot_addr(g.node, i), Slot{old}, g.pos + 1, nullptr};
          return false;
        }
      }
      throw Error("smart: a Node256 has no slot for a key byte it lacks");
    }

    // After an insert behind slot index >= the type's end: raise the type in the node's header
    // and in its parent's slot (both only upwards; readers trust the header).
    void raise_type(const KeyBytes& kb, const Gap& g, unsigned type) {
      Header h{c_->template read_value<uint64_t>(
          g.node, hint(FlushPoint::kNodeInvalidate, FlushHint::kInvalidate))};
      while (h.type() < type) {
        uint64_t old = c_->cas(g.node, h.w, h.with_type(type).w);
        if (old == h.w) {
          t_->type_switches_.fetch_add(1, std::memory_order_relaxed);
          break;
        }
        h = Header{old};
      }
      if (!g.parent_slot) return;
      Slot e = g.parent_entry;
      while (!e.empty() && !e.leaf() && e.addr() == g.node && e.type() < type) {
        uint64_t old = c_->cas(g.parent_slot, e.w, e.with_type(type).w);
        if (old == e.w) {
          if (h.depth() > 0) learn(cached(kb, h.depth() - 1), g.parent_slot, e.with_type(type).w);
          break;
        }
        e = Slot{old};
      }
    }

    // Replaces what `cur` points to (a leaf with another key, or a node whose prefix differs
    // from the key at `m`) by a new node holding it and the key's new leaf; prefixes longer
    // than a header holds become a chain of one-child nodes. false: the slot changed first.
    bool split(const KeyBytes& kb, std::string_view v, Cursor& cur, const uint8_t* other,
               unsigned m, bool leaf, Header hdr = {}) {
      if (!cur.slot) {  // cannot happen (prefix checks of cached nodes start at their path)
        cur = root_cursor();
        return false;
      }
      unsigned d = cur.depth;
      if (leaf) {
        m = d;
        while (m < g_.encoded() && kb[m] == other[m]) ++m;
        if (m == g_.encoded()) throw Error("smart: two leaves with one key");
      }
      uint8_t theirs = leaf ? other[m] : hdr.prefix(m - hdr.depth());
      GlobalAddress leaf_a = new_leaf(kb, v);
      const unsigned type = t_->opts_.adaptive_nodes ? 0 : kNode256;
      const unsigned ns = kTypeSlots[type];
      // Node images: header + ns slots each.
      unsigned chain = 0;
      for (unsigned cd = d; m - cd > kPrefixMax; cd += kPrefixMax + 1) ++chain;
      imgs_.assign(size_t{chain + 1} * (1 + ns), 0);
      std::vector<GlobalAddress> addrs(chain + 1);
      for (auto& a : addrs) a = new_node();
      unsigned cd = d;
      for (unsigned j = 0; j <= chain; ++j) {
        uint64_t* w = &imgs_[size_t{j} * (1 + ns)];
        unsigned len = j < chain ? kPrefixMax : m - cd;
        w[0] = Header::make(cd, type, &kb.b[cd], len).w;
        if (j < chain) {
          w[1] = Slot::make(kb[cd + len], false, type, addrs[j + 1]).w;
        } else {
          Slot old = cur.e.with_partial(theirs);
          if (!leaf) old = old.with_type(std::max(cur.e.type(), hdr.type()));
          Slot mine = Slot::make(kb[m], true, 0, leaf_a);
          bool first = theirs < kb[m];
          w[1] = (first ? old : mine).w;
          w[2] = (first ? mine : old).w;
        }
        cd += len + 1;
      }
      std::vector<std::pair<GlobalAddress, std::span<const uint64_t>>> writes;
      for (unsigned j = 0; j <= chain; ++j)
        writes.push_back({addrs[j], {&imgs_[size_t{j} * (1 + ns)], 1 + ns}});
      Slot top = Slot::make(cur.e.partial(), false, type, addrs[0]);
      uint64_t old = publish(writes, cur.slot, cur.e.w, top.w);
      if (old != cur.e.w) {
        t_->cas_failures_.fetch_add(1, std::memory_order_relaxed);
        t_->nodes_.fetch_sub(chain + 1, std::memory_order_relaxed);
        for (auto& a : addrs) spare_nodes_.push_back(a);
        cur.e = Slot{old};
        learn(cur.from, cur.slot, old);
        cur.from = nullptr;
        return false;
      }
      published();
      learn(cur.from ? cur.from : cached(kb, d - 1), cur.slot, top.w);
      if (leaf) {
        t_->leaf_splits_.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
      // The old node keeps the prefix bytes past m: cut its header (only ever deeper).
      t_->prefix_splits_.fetch_add(1, std::memory_order_relaxed);
      GlobalAddress na = cur.e.addr();
      Header h = hdr;
      while (h.depth() <= m) {
        uint64_t o = c_->cas(na, h.w, h.cut(m).w);
        if (o == h.w) break;
        h = Header{o};
      }
      return true;
    }

    // --- scan ----------------------------------------------------------------------------------
    // Returns false once `count` rows are collected. `tight`: the path so far equals from's bytes.
    // Where a scan puts its rows: full() once `count` are there; add() takes one present leaf.
    struct KeyRows {
      std::vector<std::pair<Key, std::string>>& rows;
      size_t count;
      uint32_t value_size;
      bool full() const { return rows.size() >= count; }
      void add(KeyView k, const char* v) {
        if (k.size() == kIntegerKeyBytes)
          rows.emplace_back(key_of_bytes(k), std::string(v, value_size));
      }
    };
    struct ByteRows {
      std::vector<std::pair<std::string, std::string>>& rows;
      size_t count;
      uint32_t value_size;
      bool full() const { return rows.size() >= count; }
      void add(KeyView k, const char* v) { rows.emplace_back(k, std::string(v, value_size)); }
    };

    // The artifact's range query starts at the cached nodes that cover the range. Here: the
    // deepest cached node on from's path holds every key with its path Q as a prefix, so its
    // subtree gives the keys >= from below Q in order; the keys after them are those >= succ(Q),
    // the smallest encoded key past every Q-prefixed one, scanned the same way from the cache.
    // `fb` is the scan's position in encoded keys (from, then the successive succ(Q)).
    template <class Sink>
    void scan_from(KeyBytes& fb, Sink& sink) {
      if (!t_->opts_.cache || !t_->opts_.scan_from_cache) {
        scan_node(t_->root_slot_, t_->root_, 0, true, fb, sink);
        return;
      }
      const uint32_t e = g_.encoded();
      for (;;) {
        auto n = t_->cache_.find(fb.view(e - 1));
        if (!n) {
          scan_node(t_->root_slot_, t_->root_, 0, true, fb, sink);
          return;
        }
        if (!scan_node(GlobalAddress(), Slot::make(0, false, n->type, n->addr), n->pos, true, fb,
                       sink))
          return;  // count rows
        unsigned p = n->pos;
        while (p > 0 && fb.b[p - 1] == 0xff) --p;
        if (p == 0) return;  // no key after Q
        ++fb.b[p - 1];
        std::memset(fb.b + p, 0, e - p);
      }
    }

    // A node's subtree in key order. Its last child, when that is a node, is scanned by this
    // loop rather than by a recursive call: a chain of nodes over a long shared prefix (a 256-byte
    // key can make one of 43 nodes) then costs no fiber stack; only a node's other inner
    // children recurse.
    template <class Sink>
    bool scan_node(GlobalAddress slot, Slot e, unsigned depth, bool tight, const KeyBytes& fb,
                   Sink& sink) {
      std::vector<uint64_t> buf(1 + kMaxSlots);
      std::vector<std::pair<uint8_t, unsigned>> kids;
      std::vector<Slot> run;
      std::vector<GlobalAddress> run_slots;
      for (;;) {
        Header h;
        for (;;) {
          unsigned n = kTypeSlots[e.type()];
          c_->read(e.addr(), buf.data(), 8 + 8 * n,
                   hint(FlushPoint::kNodeInvalidate, FlushHint::kInvalidate));
          h = Header{buf[0]};
          if (h.type() > e.type()) {
            unsigned mm = kTypeSlots[h.type()];
            c_->read(e.addr() + 8 + 8ull * n, &buf[1 + n], 8 * (mm - n),
                     hint(FlushPoint::kNodeInvalidate, FlushHint::kInvalidate));
          }
          if (h.depth() <= depth) break;
          // A cached node's path (depth + prefix) never changes (layout.h), so its header depth
          // cannot pass the path length the scan started it at.
          if (!slot) throw Error("smart: a cached node's path changed");
          e = Slot{c_->template read_value<uint64_t>(
              slot, hint(FlushPoint::kNodeInvalidate,
                         FlushHint::kInvalidate))};  // moved below a new node: re-read
          if (e.leaf()) {
            std::vector<Slot> one{e};
            std::vector<GlobalAddress> one_slot{slot};
            return scan_leaves(one, one_slot, depth, fb, sink);
          }
        }
        if (tight) {
          for (unsigned i = depth - h.depth(); i < h.len(); ++i) {
            uint8_t nb = h.prefix(i), kb = fb[h.depth() + i];
            if (nb < kb) return true;  // every key below is smaller than from
            if (nb > kb) {
              tight = false;
              break;
            }
          }
        }
        unsigned pos = h.pos();
        unsigned n = kTypeSlots[std::max(h.type(), e.type())];
        kids.clear();
        for (unsigned i = 0; i < n; ++i) {
          Slot s{buf[1 + i]};
          if (s.empty()) continue;
          if (tight && s.partial() < fb[pos]) continue;
          kids.push_back({s.partial(), i});
        }
        std::sort(kids.begin(), kids.end());
        run.clear();
        run_slots.clear();
        bool descend = false;
        for (size_t k = 0; k < kids.size(); ++k) {
          auto [p, i] = kids[k];
          Slot s{buf[1 + i]};
          if (s.leaf()) {
            run.push_back(s);
            run_slots.push_back(slot_addr(e.addr(), i));
            continue;
          }
          if (!scan_leaves(run, run_slots, pos + 1, fb, sink)) return false;
          run.clear();
          run_slots.clear();
          const bool child_tight = tight && p == fb[pos];
          if (k + 1 == kids.size()) {  // the last child: scanned by the next turn of this loop
            slot = slot_addr(e.addr(), i);
            e = s;
            depth = pos + 1;
            tight = child_tight;
            descend = true;
            break;
          }
          if (!scan_node(slot_addr(e.addr(), i), s, pos + 1, child_tight, fb, sink)) return false;
        }
        if (!descend) return scan_leaves(run, run_slots, pos + 1, fb, sink);
      }
    }

    // Reads a run of sibling leaves (in key order) in one round trip, and appends those present.
    // The leaf image l's key orders before the encoded key fb (padded bytes, then length).
    bool encoded_before(const uint64_t* l, const KeyBytes& fb) const {
      int c = std::memcmp(&l[2], fb.b, g_.key_size);
      if (c != 0 || g_.key_size == kIntegerKeyBytes) return c < 0;
      uint32_t flen = uint32_t{fb.b[g_.key_size]} << 8 | fb.b[g_.key_size + 1];
      return leaf_key_len(l[0], g_.key_size) < flen;
    }

    template <class Sink>
    // `slots`: where each leaf hangs, `depth`: the key byte below them (rcu: an obsolete leaf's
    // slot is read again).
    bool scan_leaves(const std::vector<Slot>& run, const std::vector<GlobalAddress>& slots,
                     unsigned depth, const KeyBytes& fb, Sink& sink) {
      if (sink.full()) return false;
      if (run.empty()) return true;
      const uint32_t w = g_.words();
      std::vector<uint64_t> buf(size_t{w} * run.size());
      for (size_t i = 0; i < run.size(); i += 16) {
        std::vector<Batch> bs;
        for (size_t j = i; j < std::min(run.size(), i + 16); ++j) {
          GlobalAddress a = run[j].addr();
          Batch* b = nullptr;
          for (auto& x : bs)
            if (x.node() == a.node()) b = &x;
          if (!b) b = &bs.emplace_back();
          b->read(a, &buf[j * w], g_.bytes());
        }
        c_->run(std::span<Batch>(bs.data(), bs.size()));
      }
      for (size_t j = 0; j < run.size(); ++j) {
        uint64_t* l = &buf[j * w];
        GlobalAddress at = run[j].addr();
        bool replaced_by_node = false;
        HolderWatch watch;
        for (;;) {
          while (leaf_checksum(l, w) != l[1]) {
            t_->leaf_retries_.fetch_add(1, std::memory_order_relaxed);
            if (dead_holder(watch, l[0])) throw torn(at, l[0]);
            c_->pause();
            c_->read(at, l, g_.bytes(), hint(FlushPoint::kLeafInvalidate, FlushHint::kInvalidate));
          }
          if (!(l[0] & kObsolete)) break;
          const bool dead = dead_holder(watch, l[0]);
          // rcu: replaced since the node was read: what does its slot name now?
          c_->pause();
          Slot s{c_->template read_value<uint64_t>(
              slots[j], hint(FlushPoint::kNodeInvalidate, FlushHint::kInvalidate))};
          if (!s.leaf()) {  // a split put a node there: scan it in this leaf's place
            const bool tight =
                std::memcmp(&l[2], fb.b, std::min<unsigned>(depth, g_.key_size)) == 0;
            if (!scan_node(slots[j], s, depth, tight, fb, sink)) return false;
            replaced_by_node = true;
            break;
          }
          // Still this leaf, marked by a process that died before publishing its replacement
          // (it is fenced: the slot is final): current again (revive() in walk()).
          if (dead && s.addr() == at) revive_leaf(at, l[0]);
          at = s.addr();
          c_->read(at, l, g_.bytes(), hint(FlushPoint::kLeafInvalidate, FlushHint::kInvalidate));
        }
        if (replaced_by_node || !(l[0] & kPresent)) continue;
        KeyView k(reinterpret_cast<const char*>(&l[2]), leaf_key_len(l[0], g_.key_size));
        if (encoded_before(l, fb)) continue;
        sink.add(k, reinterpret_cast<const char*>(&l[2 + g_.key_words()]));
        if (sink.full()) return false;
      }
      return true;
    }

    std::shared_ptr<Tree> t_;
    Client<T>* c_;
    LeafGeometry g_;
    std::vector<uint64_t> leaf_;                  // the leaf last read
    std::vector<uint64_t> image_;                 // a leaf being written
    std::array<uint64_t, 1 + kMaxSlots> nbuf_{};  // the node last read
    std::array<uint64_t, kMaxSlots> gbuf_{};      // a cached node's slots, copied
    std::vector<uint64_t> imgs_;                  // node images of a split
    GlobalAddress pending_leaf_;
    HolderWatch obsolete_watch_;  // walk()'s, on an obsolete leaf whose holder may have died
    bool leaf_written_ = false, leaf_published_ = false;
    std::vector<GlobalAddress> spare_leaves_, spare_nodes_;  // unpublished, reused by this handle
  };
};

// The name every index namespace offers (dmrt/runtime/index.h's Index concept).
template <Transport T>
using Index = Tree<T>;

}  // namespace dmrt::smart
