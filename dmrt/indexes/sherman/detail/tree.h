// Sherman (SIGMOD '22): B+ tree on disaggregated memory with a shared internal-node cache,
// hierarchical (local table + remote word) leaf locks with hand-over, and combined write-back.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmrt/indexes/common/btree_core.h"
#include "dmrt/indexes/common/faults.h"
#include "dmrt/indexes/common/keyed_tree.h"
#include "dmrt/indexes/common/rdwc.h"
#include "dmrt/indexes/sherman/detail/leaf.h"
#include "dmrt/indexes/sherman/detail/options.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::sherman {

// The tree over one key policy K (dmrt/indexes/common/btree_keys.h): IntKeys (key_size 8, the
// integer keys of the paper) or ByteKeys (keys of 1..key_size bytes inline in fixed slots).
// Tree<T> below picks one from Options::key_size.
template <Transport T, class K>
class BasicTree : public std::enable_shared_from_this<BasicTree<T, K>> {
 public:
  using Options = sherman::Options;
  using Tree = BasicTree;
  using View = typename K::View;
  using KeyT = typename K::Key;
  using Leaf = LeafImage<K>;
  class Handle;

  static K key_policy(const Options& o) {
    if constexpr (K::kBytes)
      return K{o.key_size};
    else
      return K{};
  }

  // Builds an empty tree (one root leaf) and publishes it in the root slot.
  [[gnu::noinline]] static std::shared_ptr<Tree> create(Client<T>& c, const Options& o) {
    auto t = std::shared_ptr<Tree>(new Tree(c, o));
    t->create_lock_tables(c);
    Leaf img(t->geo_, t->keys_);
    img.set_header(1, View{}, View{}, true, GlobalAddress::null());
    for (uint32_t i = 0; i < t->geo_.span(); ++i) img.set_entry(i, 1, false, View{}, nullptr);
    GlobalAddress leaf = c.alloc(t->geo_.remote_bytes(), 64);
    Batch b;
    img.write_hint = FlushHint::kWriteBack;  // setup: written back whatever the flush points
    img.write_image(b, leaf, true);
    c.run(b);
    btree::BTreeCore<T, K>::publish_root(c, t->core_.root_slot(), {0, leaf});
    t->leaves_.fetch_add(1);
    return t;
  }
  // Joins a tree another process (or compute node) created: fresh cache and lock table.
  [[gnu::noinline]] static std::shared_ptr<Tree> attach(Client<T>& c, const Options& o) {
    auto t = std::shared_ptr<Tree>(new Tree(c, o));
    t->find_lock_tables(c);
    t->core_.read_root(c);
    return t;
  }

  Handle handle(Client<T>& c) { return Handle(this->shared_from_this(), c); }

  // The Index concept's form: this tree has no pool-wide figures to read, only its own.
  IndexStats stats(Client<T>&) { return stats(); }
  [[gnu::noinline]] IndexStats stats() {
    const auto& cs = core_.stats();
    IndexStats s{{"height", static_cast<double>(core_.cached_height()) + 1},
                 {"leaves", static_cast<double>(leaves_.load())},
                 {"splits", static_cast<double>(splits_.load() + cs.internal_splits.load())},
                 {"leaf_splits", static_cast<double>(splits_.load())},
                 {"internal_splits", static_cast<double>(cs.internal_splits.load())},
                 {"cache_hits", static_cast<double>(cs.cache_hits.load())},
                 {"cache_misses", static_cast<double>(cs.cache_misses.load())},
                 {"cache_bytes", static_cast<double>(core_.cache().used_bytes())},
                 {"cache_evictions", static_cast<double>(core_.cache().evictions())},
                 {"handovers", static_cast<double>(llt_.handovers())},
                 {"read_retries", static_cast<double>(read_retries_.load() + cs.retries.load())},
                 {"lock_retries", static_cast<double>(lock_retries_.load())},
                 {"locks_taken_over", static_cast<double>(takeovers_.load() + cs.takeovers.load())},
                 {"line_versions", geo_.versions() ? 1.0 : 0.0}};
    if (opts_.rdwc) rdwc_.add_stats(s);
    return s;
  }
  uint64_t cache_bytes() const { return core_.cache().used_bytes(); }
  const Options& options() const { return opts_; }
  const LeafGeometry& geometry() const { return geo_; }
  // The leaf synchronization this tree runs with (never kAuto).
  Sync sync() const { return geo_.versions() ? Sync::kVersions : Sync::kChecksum; }
  // The lock word of the leaf at `leaf`: with on_chip_locks, a word of its memory node's lock
  // table in device memory (the leaf's address hashed; leaves that share a word share a lock,
  // which costs contention, never correctness: a holder holds one leaf lock at a time); else
  // the leaf's first word.
  GlobalAddress lock_word(GlobalAddress leaf) const {
    if (!opts_.on_chip_locks) return leaf;
    return lock_tables_[leaf.node()] + 8 * (mix64(leaf.raw()) % opts_.on_chip_lock_words);
  }

 private:
  BasicTree(Client<T>& c, const Options& o)
      : opts_(validate(c, o)),
        keys_(key_policy(o)),
        geo_(o.leaf_span, o.value_size, o.resolved_sync(c.line_atomic()) == Sync::kVersions,
             keys_.words()),
        llt_(o.lock_table_slots, o.handover_max),
        core_(layout::root_slot(first_memory_node(c), o.root_slot), o.internal_span, o.cache_bytes,
              o.local_lock_table ? &llt_ : nullptr, 0, false, keys_),
        lock_tables_(c.node_count()),
        rdwc_(o.rdwc ? rdwc::Combiner::kSlots : 1, rdwc::Combiner::kLimit) {
    core_.set_flushes(btree::core_flushes(o.faults.skip_flush));
  }

  static const Options& validate(Client<T>& c, const Options& o) {
    if (o.value_size == 0 || o.value_size > 1024)
      throw ConfigError("sherman: value_size must be in [1, 1024]");
    validate_option_fields("sherman", o);  // each field's range (Options::fields())
    if (o.root_slot >= layout::kRootSlots || o.locks_root_slot >= layout::kRootSlots)
      throw ConfigError("sherman: root_slot or locks_root_slot out of range");
    if (o.on_chip_locks && o.locks_root_slot == o.root_slot)
      throw ConfigError("sherman: locks_root_slot and root_slot are the same slot");
    if (o.key_size == 0 || o.key_size > kMaxKeyBytes)
      throw ConfigError("sherman: key_size must be in [1, " + std::to_string(kMaxKeyBytes) + "]");
    if (K::kBytes == (o.key_size == kIntegerKeyBytes))
      throw ConfigError("sherman: key policy does not match key_size");  // Tree<T> picks it
    if (o.sync == Sync::kVersions && o.key_size != kIntegerKeyBytes)
      throw ConfigError(
          "sherman: sync=versions needs key_size 8 (a byte-key leaf's fences span lines that "
          "carry no version); use sync=checksum");
    if (o.sync == Sync::kVersions && !c.line_atomic())
      throw ConfigError(
          "sherman: sync=versions needs a transport that reads and writes 64-byte "
          "lines atomically (sim, verbs on a NIC); " +
          std::string(T::kName) + " here only promises 8-byte words: use sync=checksum (or auto)");
    if (o.sync == Sync::kVersions && o.value_size > LeafGeometry::kMaxVersionsValue)
      throw ConfigError(
          "sherman: sync=versions needs value_size <= 54 (an entry must fit a "
          "64-byte line for its front and rear versions to cover it); use "
          "sync=checksum");
    return o;
  }
  static NodeId first_memory_node(Client<T>& c) {
    auto m = c.memory_nodes();
    if (m.empty()) throw ConfigError("sherman: the cluster has no memory node");
    return m.front();
  }

  // With on_chip_locks, every memory node gets a lock table in its device memory (zeroed: every
  // lock free), published in its locks root slot for attach().
  void create_lock_tables(Client<T>& c) {
    if (!opts_.on_chip_locks) return;
    for (NodeId m : c.memory_nodes()) {
      lock_tables_[m] = c.alloc_device_memory(m, uint64_t{opts_.on_chip_lock_words} * 8);
      const uint64_t raw = lock_tables_[m].raw();
      c.write(layout::root_slot(m, opts_.locks_root_slot), &raw, 8, FlushHint::kWriteBack);
    }
  }
  void find_lock_tables(Client<T>& c) {
    if (!opts_.on_chip_locks) return;
    for (NodeId m : c.memory_nodes()) {
      lock_tables_[m] = GlobalAddress::from_raw(c.template read_value<uint64_t>(
          layout::root_slot(m, opts_.locks_root_slot), FlushHint::kInvalidate));
      if (!lock_tables_[m].in_device_memory() || lock_tables_[m].node() != m)
        throw ConfigError("sherman: on_chip_locks is on, but memory node " + std::to_string(m) +
                          " has no on-chip lock table (the tree was created with it off?)");
    }
  }

  Options opts_;
  K keys_;
  LeafGeometry geo_;
  btree::LocalLockTable llt_;
  btree::BTreeCore<T, K> core_;
  std::vector<GlobalAddress> lock_tables_;  // by node: its on-chip lock table (on_chip_locks)
  rdwc::Combiner rdwc_;                     // this compute node's (one Tree per compute node)
  std::atomic<uint64_t> leaves_{0}, splits_{0}, read_retries_{0}, lock_retries_{0}, takeovers_{0};

 public:
  // One client's view: all verbs go through this client. Not shared between fibers.
  class Handle {
   public:
    Handle(std::shared_ptr<Tree> t, Client<T>& c)
        : t_(std::move(t)), c_(&c), img_(t_->geo_, t_->keys_) {
      const auto& skip = t_->opts_.faults.skip_flush;
      img_.read_hint = flush_hint(skip, FlushPoint::kLeafInvalidate, FlushHint::kInvalidate);
      img_.write_hint = flush_hint(skip, FlushPoint::kLeafWriteBack, FlushHint::kWriteBack);
    }

    // With RDWC on, a search of k that another search of k on this compute node is running
    // takes its result, and concurrent updates of k are combined into one write of the last
    // queued value; inserts and deletes run themselves (dmrt/indexes/common/rdwc.h).
    [[gnu::noinline]] bool search(View k, std::string& out) {
      if (t_->opts_.rdwc)
        return t_->rdwc_.run(*c_, k, false, {}, &out, [&](std::string_view, std::string* o) {
          return search_direct(k, *o);
        });
      return search_direct(k, out);
    }
    bool insert(View k, std::string_view v) { return write_op(k, v, Op::kInsert); }
    bool update(View k, std::string_view v) {
      if (t_->opts_.rdwc) {
        check_value(v);  // before queueing: a bad value must fail only its own caller
        return t_->rdwc_.run(*c_, k, true, v, nullptr, [&](std::string_view wv, std::string*) {
          return write_op(k, wv, Op::kUpdate);
        });
      }
      return write_op(k, v, Op::kUpdate);
    }
    bool remove(View k) { return write_op(k, {}, Op::kRemove); }

    // Up to `count` rows with key >= from, ascending. Keys of a leaf are sorted as views into
    // its image; only the rows returned copy them.
    [[gnu::noinline]] void scan(View from, size_t count,
                                std::vector<std::pair<KeyT, std::string>>& rows) {
      rows.clear();
      if (count == 0) return;
      typename btree::BTreeCore<T, K>::Located loc = t_->core_.locate(*c_, from);
      GlobalAddress a = loc.leaf;
      bool any = false;
      KeyT last{};
      std::vector<std::pair<View, uint32_t>> ks;
      while (a && rows.size() < count) {
        read_leaf(a);
        ks.clear();
        for (uint32_t i = 0; i < t_->geo_.span(); ++i)
          if (img_.occupied(i) && img_.key(i) >= from && (!any || img_.key(i) > K::view(last)))
            ks.emplace_back(img_.key(i), i);
        std::sort(ks.begin(), ks.end());
        for (auto& [k, i] : ks) {
          if (rows.size() == count) break;
          std::string v;
          btree::load_value(img_.value(i), t_->geo_.value_size(), v);
          rows.emplace_back(KeyT(k), std::move(v));
          last = KeyT(k);
          any = true;
        }
        a = img_.sibling();
      }
    }

    Client<T>& client() { return *c_; }

   private:
    bool search_direct(View k, std::string& out) {
      for (;;) {
        typename btree::BTreeCore<T, K>::Located loc = t_->core_.locate(*c_, k);
        GlobalAddress a = loc.leaf;
        bool cached = loc.from_cache;
        unsigned hops = 0;  // sibling moves since this locate (kMaxHops)
        for (;;) {
          const int i = read_for_search(a, k);
          if (i == Leaf::kOutside) {
            if (k < img_.lo()) break;      // not reachable with B-link invariants; restart
            if (++hops > kMaxHops) break;  // not a recent split: a stale start; restart
            // The leaf split after the parent was read: move right.
            if (cached) t_->core_.cache().invalidate(loc.parent);
            cached = false;
            a = img_.sibling();
            continue;
          }
          if (i < 0) return false;
          btree::load_value(img_.value(i), t_->geo_.value_size(), out);
          return true;
        }
        t_->core_.cache().invalidate(loc.parent);
      }
    }
    enum class Op { kInsert, kUpdate, kRemove };
    // Sibling moves one locate may take before it locates again. A leaf split after its parent
    // was read is one or two moves away; more means the walk started far from the key: from a
    // root that was still a single leaf when the operation began (the start of a load, when every
    // client locates the first leaf). Walking on from there costs a round trip, and a lock, per
    // leaf of the whole tree.
    static constexpr unsigned kMaxHops = 8;

    // One READ of the whole leaf for a search of k, repeated until the objects its answer rests
    // on are sealed with one node version (LeafImage::search): k's entry, or kAbsent / kOutside.
    int read_for_search(GlobalAddress a, View k) {
      for (;;) {
        Batch b;
        img_.read_into(b, a);
        c_->run(b);
        img_.finish_read();
        const int i = img_.search(k);
        if (i != Leaf::kTorn) return i;
        if (injected(t_->opts_.faults.skip_validation)) return img_.search(k, false);
        t_->read_retries_.fetch_add(1, std::memory_order_relaxed);
        c_->pause();
      }
    }

    // One READ of the whole leaf, repeated until every object is sealed with one node version.
    void read_leaf(GlobalAddress a) {
      for (;;) {
        Batch b;
        img_.read_into(b, a);
        c_->run(b);
        img_.finish_read();
        if (img_.consistent() || injected(t_->opts_.faults.skip_validation)) return;
        t_->read_retries_.fetch_add(1, std::memory_order_relaxed);
        c_->pause();
      }
    }

    // Local queue, then (unless handed over) CAS of the lock word and READ of the leaf in one
    // batch. Under the lock the image is stable.
    void lock_and_read(GlobalAddress a) {
      bool local = t_->opts_.local_lock_table;
      const GlobalAddress lock = t_->lock_word(a);
      bool handed = local && t_->llt_.acquire(*c_, lock);
      if (handed) held_ = a;  // the remote lock is already ours
      try {
        HolderWatch watch;
        uint64_t expect = 0;  // free; or the word a dead holder left, to take over
        for (;;) {
          uint64_t old = 0;
          Batch b;  // the lock word may be in device memory: one node, one batch all the same
          if (!handed) b.cas(lock, expect, uint64_t{c_->id()} + 1, &old);
          img_.read_into(b, a);
          c_->run(b);
          img_.finish_read();
          if (handed || old == expect) {
            held_ = a;
            if (expect != 0) took_over(a, expect);
            return;
          }
          t_->lock_retries_.fetch_add(1, std::memory_order_relaxed);
          // A holder whose process was declared dead and fenced never lets go: take it over.
          expect = old != 0 && watch.dead(*c_, old, static_cast<uint32_t>(old - 1)) ? old : 0;
          if (expect == 0) c_->pause();
        }
      } catch (...) {
        if (!held_ && local) t_->llt_.release(lock, false);  // local slot only: no remote lock
        throw;
      }
    }
    // The lock of leaf `a` was taken from a dead holder (client `word` - 1); the image was read
    // under it. Whatever the holder wrote whole stands: an entry or a whole image written before
    // the unlock it never sent, or a split's right leaf (reachable only once the left image that
    // points at it is written, else leaked). A write it left half done shows as objects sealed
    // with different versions: nothing says which half is right, so the leaf is reported, not
    // guessed at.
    void took_over(GlobalAddress a, uint64_t word) {
      t_->takeovers_.fetch_add(1, std::memory_order_relaxed);
      if (img_.consistent()) return;
      release_after_error();
      throw Error("sherman: leaf " + a.to_string() + " was left half written by client " +
                  std::to_string(word - 1) + ", whose process died holding its lock");
    }
    // On an error path (pool exhausted, transport failure) under the leaf lock: release it, so
    // that the other clients see the error instead of waiting for this lock forever.
    void release_after_error() noexcept {
      if (!held_) return;
      const GlobalAddress lock = t_->lock_word(held_);
      held_ = GlobalAddress{};
      static const uint64_t kZero = 0;
      try {
        c_->release(lock, &kZero, 8);
      } catch (...) {  // the transport failed: the original error is the one to report
      }
      if (t_->opts_.local_lock_table) t_->llt_.release(lock, false);
    }
    // Runs the write-back batch and releases the lock: the unlock WRITE rides in the same batch
    // (write combining) unless the lock is handed to a local waiter.
    void write_and_unlock(GlobalAddress a, Batch& b) {
      held_ = GlobalAddress{};  // from here on the release is under way
      const GlobalAddress lock = t_->lock_word(a);
      bool hand = t_->opts_.local_lock_table && t_->llt_.should_hand_over(lock);
      static const uint64_t kZero = 0;
      if (!hand) {
        if (t_->opts_.write_combining || b.empty()) {
          b.release(lock, &kZero, 8);
        } else {
          c_->run(b);
          b.clear();
          b.release(lock, &kZero, 8);
        }
      }
      if (!b.empty()) c_->run(b);
      if (t_->opts_.local_lock_table) t_->llt_.release(lock, hand);
    }
    void unlock(GlobalAddress a) {
      Batch b;
      write_and_unlock(a, b);
    }

    [[gnu::noinline]] bool write_op(View k, std::string_view v, Op op) {
      try {
        return write_op_locking(k, v, op);
      } catch (...) {
        release_after_error();
        throw;
      }
    }
    void check_value(std::string_view v) const {
      if (v.size() > t_->geo_.value_size())
        throw LimitError("sherman: value of " + std::to_string(v.size()) +
                         " bytes exceeds value_size " + std::to_string(t_->geo_.value_size()));
    }
    bool write_op_locking(View k, std::string_view v, Op op) {
      const LeafGeometry& g = t_->geo_;
      if (op != Op::kRemove) check_value(v);
      std::vector<uint64_t> val(g.vw());
      if (op != Op::kRemove) btree::store_value(val.data(), v, g.value_size());
      for (;;) {
        typename btree::BTreeCore<T, K>::Located loc = t_->core_.locate(*c_, k);
        GlobalAddress a = loc.leaf;
        bool restart = false;
        unsigned hops = 0;  // sibling moves since this locate (kMaxHops)
        for (;;) {
          lock_and_read(a);
          if (k < img_.lo()) {
            unlock(a);
            restart = true;
            break;
          }
          if (!img_.covers(k)) {
            unlock(a);
            if (++hops > kMaxHops) {  // not a recent split: a stale start; re-locate
              restart = true;
              break;
            }
            if (loc.from_cache) t_->core_.cache().invalidate(loc.parent);
            loc.from_cache = false;
            a = img_.sibling();
            continue;
          }
          return apply(a, k, val.data(), op);
        }
        if (restart) t_->core_.cache().invalidate(loc.parent);
      }
    }

    // Under the lock, with img_ current.
    bool apply(GlobalAddress a, View k, const uint64_t* val, Op op) {
      int i = img_.find(k);
      uint8_t nv = img_.nv();
      Batch b;
      if (op == Op::kUpdate || op == Op::kRemove) {
        if (i < 0) {
          unlock(a);
          return false;
        }
        if (op == Op::kUpdate) {
          img_.set_entry(i, nv, true, k, val);
          img_.write_entry(b, a, static_cast<uint32_t>(i));
        } else if (!t_->opts_.sorted_leaves) {
          img_.set_entry(i, nv, false, View{}, nullptr);
          img_.write_entry(b, a, static_cast<uint32_t>(i));
        } else {
          remove_sorted(static_cast<uint32_t>(i));
          img_.reseal_all(static_cast<uint8_t>(nv + 1));
          img_.write_image(b, a, false);
        }
        write_and_unlock(a, b);
        return true;
      }
      // insert
      if (i >= 0) {
        unlock(a);
        return false;
      }
      if (injected(t_->opts_.faults.ack_without_write)) {
        unlock(a);
        return true;
      }
      int f = img_.free_slot();
      if (f >= 0) {
        if (!t_->opts_.sorted_leaves) {
          img_.set_entry(f, nv, true, k, val);
          img_.write_entry(b, a, static_cast<uint32_t>(f));
        } else {
          insert_sorted(k, val);
          img_.reseal_all(static_cast<uint8_t>(nv + 1));
          img_.write_image(b, a, false);
        }
        write_and_unlock(a, b);
        return true;
      }
      split_and_insert(a, k, val);
      return true;
    }

    void insert_sorted(View k, const uint64_t* val) {
      // Occupied entries are a sorted prefix; shift the tail one slot right.
      uint32_t n = 0;
      while (n < t_->geo_.span() && img_.occupied(n)) ++n;
      uint32_t p = 0;
      while (p < n && img_.key(p) < k) ++p;
      for (uint32_t j = n; j > p; --j)
        img_.set_entry(j, 0, true, img_.key(j - 1), img_.value(j - 1));
      img_.set_entry(p, 0, true, k, val);
    }
    void remove_sorted(uint32_t i) {
      uint32_t n = 0;
      while (n < t_->geo_.span() && img_.occupied(n)) ++n;
      for (uint32_t j = i; j + 1 < n; ++j)
        img_.set_entry(j, 0, true, img_.key(j + 1), img_.value(j + 1));
      img_.set_entry(n - 1, 0, false, View{}, nullptr);
    }

    // Leaf full: the upper half moves to a new leaf, written before the old leaf points to it;
    // then the old leaf (new fence and sibling, nv+1) is written and unlocked; then the
    // separator goes up.
    void split_and_insert(GlobalAddress a, View k, const uint64_t* val) {
      const LeafGeometry& g = t_->geo_;
      struct Item {
        KeyT k;
        std::vector<uint64_t> v;
      };
      std::vector<Item> items;
      for (uint32_t i = 0; i < g.span(); ++i)
        if (img_.occupied(i))
          items.push_back({KeyT(img_.key(i)), {img_.value(i), img_.value(i) + g.vw()}});
      items.push_back({KeyT(k), {val, val + g.vw()}});
      std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) { return x.k < y.k; });
      size_t m = items.size() / 2;
      const View sep = K::view(items[m].k);
      uint8_t nv = static_cast<uint8_t>(img_.nv() + 1);

      Leaf right(g, t_->keys_);
      right.set_header(nv, sep, img_.hi(), img_.hi_inf(), img_.sibling());
      Leaf left(g, t_->keys_);
      right.write_hint = left.write_hint = img_.write_hint;
      GlobalAddress ra = c_->alloc(g.remote_bytes(), 64);
      left.set_header(nv, img_.lo(), sep, false, ra);
      for (uint32_t i = 0; i < g.span(); ++i) {
        size_t li = i, ri = m + i;
        if (li < m)
          left.set_entry(i, nv, true, items[li].k, items[li].v.data());
        else
          left.set_entry(i, nv, false, View{}, nullptr);
        if (ri < items.size())
          right.set_entry(i, nv, true, items[ri].k, items[ri].v.data());
        else
          right.set_entry(i, nv, false, View{}, nullptr);
      }
      Batch nb;
      right.write_image(nb, ra, true);
      c_->run(nb);
      Batch b;
      left.write_image(b, a, false);
      write_and_unlock(a, b);
      t_->splits_.fetch_add(1, std::memory_order_relaxed);
      t_->leaves_.fetch_add(1, std::memory_order_relaxed);
      t_->core_.insert_separator(*c_, 1, sep, ra, a);
    }

    std::shared_ptr<Tree> t_;
    Client<T>* c_;
    Leaf img_;
    GlobalAddress held_;  // the leaf lock this handle holds, if any
  };
};

// Sherman as the index contract offers it: integer keys (Options::key_size 8, the paper's and
// the default) or byte-string keys up to key_size bytes, chosen when the tree is built
// (dmrt/indexes/common/keyed_tree.h).
template <Transport T>
class Tree : public btree::KeyedTree<T, BasicTree, Tree<T>> {
 public:
  static constexpr const char* kName = "sherman";
  Sync sync() const {
    return this->visit([](auto& t) { return t.sync(); });
  }
  GlobalAddress lock_word(GlobalAddress leaf) const {
    return this->visit([&](auto& t) { return t.lock_word(leaf); });
  }

 private:
  friend btree::KeyedTree<T, BasicTree, Tree<T>>;
  Tree() = default;
};

// The name every index namespace offers (dmrt/runtime/index.h's Index concept).
template <Transport T>
using Index = Tree<T>;

}  // namespace dmrt::sherman
