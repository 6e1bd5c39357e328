// CHIME (SOSP '24): B+ tree upper levels (cached) over hopscotch-hashed leaves, with three-level
// optimistic synchronization, piggybacked vacancy bitmaps, replicated leaf metadata,
// sibling-based validation and hotness-aware speculative reads.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "indexes/chime/hotspot.h"
#include "indexes/chime/leaf.h"
#include "indexes/chime/options.h"
#include "indexes/common/btree_core.h"
#include "indexes/common/faults.h"
#include "indexes/common/rdwc.h"
#include "runtime/client.h"
#include "runtime/error.h"
#include "runtime/kv.h"
#include "runtime/layout.h"

namespace dmrt::chime {

template <Transport T>
class Tree : public std::enable_shared_from_this<Tree<T>> {
 public:
  using Options = chime::Options;
  class Handle;

  [[gnu::noinline]] static std::shared_ptr<Tree> create(Client<T>& c, const Options& o) {
    auto t = std::shared_ptr<Tree>(new Tree(c, o));
    LeafImage img(t->geo_);
    for (uint32_t r = 0; r < t->geo_.groups(); ++r) img.set_replica(r, 1, GlobalAddress::null());
    for (uint32_t i = 0; i < t->geo_.span(); ++i) img.set_entry(i, 1, 0, 0, 0, nullptr);
    img.w[t->geo_.lock_word()] = 0;
    GlobalAddress leaf = t->alloc_leaf(c);
    Batch b;
    img.write_into(b, leaf, {0, t->geo_.node_words() + 1}, true);
    c.run(b);
    btree::BTreeCore<T>::publish_root(c, t->core_.root_slot(), {0, leaf});
    t->leaves_.fetch_add(1);
    return t;
  }
  [[gnu::noinline]] static std::shared_ptr<Tree> attach(Client<T>& c, const Options& o) {
    auto t = std::shared_ptr<Tree>(new Tree(c, o));
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
                 {"hotspot_bytes", static_cast<double>(hot_.bytes())},
                 {"speculative_hits", static_cast<double>(spec_hits_.load())},
                 {"speculative_misses", static_cast<double>(spec_misses_.load())},
                 {"sibling_moves", static_cast<double>(sibling_moves_.load())},
                 {"read_retries", static_cast<double>(read_retries_.load() + cs.retries.load())},
                 {"lock_retries", static_cast<double>(lock_retries_.load())},
                 {"line_versions", geo_.versions() ? 1.0 : 0.0}};
    if (opts_.rdwc) rdwc_.add_stats(s);
    return s;
  }
  // Internal-node cache in use (the hotspot buffer is a separate, fixed budget).
  uint64_t cache_bytes() const { return core_.cache().used_bytes(); }
  const Options& options() const { return opts_; }
  const Geometry& geometry() const { return geo_; }
  // The leaf synchronization this tree runs with (never kAuto).
  Sync sync() const { return geo_.versions() ? Sync::kVersions : Sync::kChecksum; }

 private:
  Tree(Client<T>& c, const Options& o)
      : opts_(validate(c, o)),
        geo_(o.span, o.neighborhood, o.value_size,
             o.resolved_sync(c.line_atomic()) == Sync::kVersions),
        hot_(o.speculative_read ? o.hotspot_bytes : 0),
        core_(layout::root_slot(first_memory_node(c), o.root_slot), o.internal_span, o.cache_bytes,
              nullptr),
        rdwc_(o.rdwc ? rdwc::Combiner::kSlots : 1, rdwc::Combiner::kLimit) {}

  static const Options& validate(Client<T>& c, const Options& o) {
    if (o.value_size == 0 || o.value_size > 1024)
      throw ConfigError("chime: value_size must be in [1, 1024]");
    validate_option_fields("chime", o);  // each field's range (Options::fields())
    if (o.neighborhood > o.span) throw ConfigError("chime: neighborhood must not exceed span");
    if (o.root_slot >= layout::kRootSlots) throw ConfigError("chime: root_slot out of range");
    if (o.sync == Sync::kVersions && !c.line_atomic())
      throw ConfigError(
          "chime: sync=versions needs a transport that reads and writes 64-byte lines "
          "atomically (sim, verbs on a NIC); " +
          std::string(T::kName) + " here only promises 8-byte words: use sync=checksum (or auto)");
    return o;
  }
  static NodeId first_memory_node(Client<T>& c) {
    auto m = c.memory_nodes();
    if (m.empty()) throw ConfigError("chime: the cluster has no memory node");
    return m.front();
  }
  // 256-byte alignment frees the low byte of a leaf address for the hotspot buffer's slot index.
  GlobalAddress alloc_leaf(Client<T>& c) {
    uint64_t bytes = (geo_.remote_bytes() + 255) & ~uint64_t{255};
    return c.alloc(bytes, bytes <= 4096 ? 256 : 64);
  }

  Options opts_;
  Geometry geo_;
  HotspotBuffer hot_;
  btree::BTreeCore<T> core_;
  rdwc::Combiner rdwc_;  // this compute node's (one Tree per compute node)
  std::atomic<uint64_t> leaves_{0}, splits_{0}, spec_hits_{0}, spec_misses_{0}, sibling_moves_{0},
      read_retries_{0}, lock_retries_{0};

 public:
  class Handle {
   public:
    Handle(std::shared_ptr<Tree> t, Client<T>& c) : t_(std::move(t)), c_(&c), img_(t_->geo_) {}

    // 1 RTT (neighborhood or speculative entry), 2 when a speculation misses; none when another
    // search of k on this compute node shares its result (RDWC).
    [[gnu::noinline]] bool search(Key k, std::string& out) {
      if (t_->opts_.rdwc)
        return t_->rdwc_.run(*c_, k, false, {}, &out, [&](std::string_view, std::string* o) {
          return search_direct(k, *o);
        });
      return search_direct(k, out);
    }
    bool insert(Key k, std::string_view v) { return write_op(k, v, Op::kInsert); }
    // With RDWC, concurrent updates of k on this compute node are combined: one of them writes the
    // last queued value for all (inserts and deletes run themselves, indexes/common/rdwc.h).
    bool update(Key k, std::string_view v) {
      if (!t_->opts_.rdwc) return write_op(k, v, Op::kUpdate);
      check_value(v);  // before queueing: a bad value must fail only its own caller
      return t_->rdwc_.run(*c_, k, true, v, nullptr, [&](std::string_view wv, std::string*) {
        return write_op(k, wv, Op::kUpdate);
      });
    }
    bool remove(Key k) { return write_op(k, {}, Op::kRemove); }

    // Whole leaves (general keys: the keys in range are unknown, notes A12), in key order. With
    // parallel_scan (§3.9), the leaves that the cached level-1 node names after the first are
    // read with it in one round trip: enough of them for `count` rows if each holds span/2 live
    // keys, then another batch if not. A leaf's sibling pointer must name the next leaf of the
    // batch; where a split put a new leaf between them, the rest of the batch is dropped and the
    // scan goes on from the sibling, as the sequential scan does.
    [[gnu::noinline]] void scan(Key from, size_t count,
                                std::vector<std::pair<Key, std::string>>& rows) {
      rows.clear();
      if (count == 0) return;
      const Geometry& g = t_->geo_;
      btree::Located loc = t_->core_.locate(*c_, from);
      GlobalAddress a = loc.leaf;
      bool any = false;
      Key last = 0;
      std::vector<std::pair<Key, uint32_t>> ks;
      auto take = [&](const LeafImage& img) {
        ks.clear();
        for (uint32_t i = 0; i < g.span(); ++i)
          if (img.occupied(i) && !img.tomb(i) && img.key(i) >= from && (!any || img.key(i) > last))
            ks.emplace_back(img.key(i), i);
        std::sort(ks.begin(), ks.end());
        for (auto& [k, i] : ks) {
          if (rows.size() == count) break;
          std::string v;
          btree::load_value(img.value(i), g.value_size(), v);
          rows.emplace_back(k, std::move(v));
          last = k;
          any = true;
        }
      };
      while (a && rows.size() < count) {
        plan_scan_batch(a, any ? last : from, count - rows.size());
        if (scan_plan_.size() == 1) {
          read_whole_consistent(a);
          take(img_);
          a = img_.sibling_of(0);
          continue;
        }
        read_leaves_consistent();
        for (size_t i = 0; i < scan_plan_.size() && rows.size() < count; ++i) {
          take(scan_imgs_[i]);
          a = scan_imgs_[i].sibling_of(0);
          if (i + 1 < scan_plan_.size() && a != scan_plan_[i + 1]) break;  // a split between
        }
      }
    }

    Client<T>& client() { return *c_; }

   private:
    bool search_direct(Key k, std::string& out) {
      const Geometry& g = t_->geo_;
      auto [home, fp] = g.home_fp(k);
      for (;;) {
        btree::Located loc = t_->core_.locate(*c_, k);
        if (t_->opts_.speculative_read && speculate(loc.leaf, k, home, fp, out)) return true;
        GlobalAddress a = loc.leaf;
        bool restart = false;
        for (;;) {
          read_neighborhood(a, home);
          GlobalAddress sib = img_.sibling();
          if (loc.from_cache && sib != loc.next) {  // SBV: cached parent is stale
            t_->core_.cache().invalidate(loc.parent);
            restart = true;
            break;
          }
          int i = find_in_neighborhood(k, home);
          if (i >= 0) {
            if (img_.tomb(i)) return false;
            t_->hot_.touch(a, static_cast<uint32_t>(i), fp);
            btree::load_value(img_.value(i), g.value_size(), out);
            return true;
          }
          if (!injected(t_->opts_.faults.skip_bitmap_check) &&
              !img_.bitmap_matches(home)) {  // level 3
            t_->read_retries_.fetch_add(1, std::memory_order_relaxed);
            c_->pause();
            continue;
          }
          if (sib != loc.next) {  // half split: the key may have moved right
            t_->sibling_moves_.fetch_add(1, std::memory_order_relaxed);
            a = sib;
            continue;
          }
          return false;
        }
        if (!restart) return false;
      }
    }

    enum class Op { kInsert, kUpdate, kRemove };
    const Geometry& g() const { return t_->geo_; }
    GlobalAddress lock_addr(GlobalAddress a) const { return a + g().lock_offset(); }

    // Hotness-aware speculative read: the hottest buffered slot of the neighborhood whose
    // fingerprint matches; one entry READ; a hit needs a sealed, live entry holding k.
    bool speculate(GlobalAddress leaf, Key k, uint32_t home, uint16_t fp, std::string& out) {
      if (!t_->hot_.enabled()) return false;
      uint32_t best = 0, best_i = 0;
      for (uint32_t d = 0; d < g().h(); ++d) {
        uint32_t i = (home + d) % g().span();
        uint32_t cnt = t_->hot_.lookup(leaf, i, fp);
        if (cnt > best) best = cnt, best_i = i;
      }
      if (!best) return false;
      img_.forget();
      fetch(leaf, {{g().entry_word(best_i), g().entry_word(best_i) + g().ew()}});
      if (img_.consistent(nullptr) && img_.occupied(best_i) && !img_.tomb(best_i) &&
          img_.key(best_i) == k) {
        t_->spec_hits_.fetch_add(1, std::memory_order_relaxed);
        t_->hot_.touch(leaf, best_i, fp);
        btree::load_value(img_.value(best_i), g().value_size(), out);
        return true;
      }
      t_->spec_misses_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }

    int find_in_neighborhood(Key k, uint32_t home) const {
      for (uint32_t d = 0; d < g().h(); ++d) {
        uint32_t i = (home + d) % g().span();
        if (img_.have_e[i] && img_.occupied(i) && img_.key(i) == k) return static_cast<int>(i);
      }
      return -1;
    }

    // Segments an access to k's neighborhood reads (whole leaf without hopscotch reads).
    std::vector<Segment> neighborhood_segments(uint32_t home) const {
      if (!t_->opts_.hopscotch_leaf) return {{0, g().node_words()}};
      return img_.entry_range(home, (home + g().h() - 1) % g().span(), true);
    }
    // Reads `segs` in one batch. With `with_metadata` and replication off (the factor analysis
    // before its replication step), the leaf's metadata is its header alone: replicas the
    // segments happen to cover are not relied on, and the header is one more READ in the same
    // batch unless the segments cover it already (a whole leaf does). Same round trip, one more
    // verb and 16 B: what replication saves.
    void fetch(GlobalAddress a, const std::vector<Segment>& segs, bool with_metadata = false) {
      Batch b;
      bool header = false;
      for (auto s : segs) {
        img_.read_into(b, a, s);
        header = header || (s.from == 0 && s.to >= 2);
      }
      if (with_metadata && !t_->opts_.metadata_replication) {
        std::fill(img_.have_r.begin(), img_.have_r.end(), 0);
        if (!header) img_.read_into(b, a, {0, 2});
        img_.have_r[0] = 1;
      }
      c_->run(b);
      img_.finish_reads();
    }
    void read_neighborhood(GlobalAddress a, uint32_t home) {
      for (;;) {
        img_.forget();
        fetch(a, neighborhood_segments(home), true);
        if (img_.consistent(nullptr)) return;
        t_->read_retries_.fetch_add(1, std::memory_order_relaxed);
        c_->pause();
      }
    }
    // The leaves a scan reads together: `a`, which holds k or is the leaf right after the one
    // that does, and the leaves the cached level-1 nodes name after it (crossing into the next
    // cached node), enough for `want` rows at span/2 live keys per leaf. Just `a` without
    // parallel_scan, or when no cached node names it.
    void plan_scan_batch(GlobalAddress a, Key k, size_t want) {
      scan_plan_.assign(1, a);
      if (!t_->opts_.parallel_scan) return;
      const size_t per_leaf = std::max<size_t>(1, g().span() / 2);
      const size_t leaves = std::min<size_t>((want + per_leaf - 1) / per_leaf, kMaxScanBatch);
      if (leaves <= 1) return;
      auto n = t_->core_.cache().find(k, 1);
      if (!n || n->level != 1) return;
      size_t p = n->child_pos(k);
      if (n->child_at(p) != a && n->next_of(p) == a) ++p;  // k is the previous leaf's last key
      if (p > n->count()) {                                // a starts the next node
        if (n->hi_inf || !(n = t_->core_.cache().find(n->hi, 1)) || n->level != 1) return;
        p = 0;
      }
      if (n->child_at(p) != a) return;
      for (;;) {
        for (size_t q = p + 1; q <= n->count(); ++q) {
          if (scan_plan_.size() == leaves) return;
          scan_plan_.push_back(n->child_at(q));
        }
        if (scan_plan_.size() == leaves || n->hi_inf) return;
        const GlobalAddress first = n->sibling_leftmost;
        if (!(n = t_->core_.cache().find(n->hi, 1)) || n->level != 1 || n->child_at(0) != first)
          return;
        scan_plan_.push_back(first);
        p = 0;
      }
    }
    // Reads the planned leaves whole in one round trip (one batch per memory node, posted
    // together); a leaf caught locked or torn is read again alone, as read_whole_consistent does.
    void read_leaves_consistent() {
      const uint32_t words = g().node_words() + 1;
      while (scan_imgs_.size() < scan_plan_.size()) scan_imgs_.emplace_back(g());
      scan_batches_.clear();
      for (size_t i = 0; i < scan_plan_.size(); ++i) {
        auto it = std::find_if(scan_batches_.begin(), scan_batches_.end(), [&](const Batch& b) {
          return b.node() == scan_plan_[i].node() && b.size() < Batch::kMaxVerbs;
        });
        if (it == scan_batches_.end()) it = scan_batches_.emplace(scan_batches_.end());
        scan_imgs_[i].forget();
        scan_imgs_[i].read_into(*it, scan_plan_[i], {0, words});
      }
      c_->run(std::span<Batch>(scan_batches_));
      for (size_t i = 0; i < scan_plan_.size(); ++i) {
        LeafImage& img = scan_imgs_[i];
        img.finish_reads();
        bool locked = img.w[g().lock_word()] & Geometry::kLock;
        if (!locked && img.consistent(nullptr) &&
            (injected(t_->opts_.faults.skip_bitmap_check) || img.all_bitmaps_match()))
          continue;
        t_->read_retries_.fetch_add(1, std::memory_order_relaxed);
        std::swap(img_, img);
        read_whole_consistent(scan_plan_[i]);
        std::swap(img_, img);
      }
    }

    // The lock word is fetched last in the same READ: a writer still holding it may be midway
    // through a hop range, so the image is retried rather than trusted to level 3 alone.
    void read_whole_consistent(GlobalAddress a) {
      for (;;) {
        img_.forget();
        fetch(a, {{0, g().node_words() + 1}});
        bool locked = img_.w[g().lock_word()] & Geometry::kLock;
        if (!locked && img_.consistent(nullptr) &&
            (injected(t_->opts_.faults.skip_bitmap_check) || img_.all_bitmaps_match()))
          return;
        t_->read_retries_.fetch_add(1, std::memory_order_relaxed);
        c_->pause();
      }
    }

    // Masked CAS on the lock bit only: the old word (vacancy bitmap, argmax) comes back free.
    // Without hopscotch leaves the whole leaf and its lock word are READ in the same batch,
    // after the CAS, as Sherman does: the factor analysis's baseline write is Sherman's
    // [lock + READ leaf] ; [WRITE + unlock]. With hopscotch leaves but no piggybacking the
    // bitmap is a READ of its own once the lock is held (the round trip piggybacking saves,
    // §4.2); without it the bitmap bits of the returned word are not used.
    // `leaf_read` tells whether the image now holds the whole leaf.
    uint64_t lock_leaf(GlobalAddress a, bool& leaf_read) {
      const bool with_leaf = !t_->opts_.hopscotch_leaf;
      for (;;) {
        uint64_t old = 0;
        Batch b;
        b.masked_cas(lock_addr(a), 0, Geometry::kLock, Geometry::kLock, Geometry::kLock, &old);
        if (with_leaf) {
          img_.forget();
          img_.read_into(b, a, {0, g().node_words() + 1});
        }
        c_->run(b);
        if (with_leaf) img_.finish_reads();
        if (!(old & Geometry::kLock)) {
          held_ = a;
          held_word_ = old;
          if (with_leaf) {
            if (!t_->opts_.metadata_replication) {  // the header alone, as in fetch()
              std::fill(img_.have_r.begin(), img_.have_r.end(), 0);
              img_.have_r[0] = 1;
            }
            if (!t_->opts_.vacancy_piggyback)
              held_word_ = old = img_.w[g().lock_word()] & ~Geometry::kLock;
          } else if (!t_->opts_.vacancy_piggyback) {
            held_word_ = old = c_->template read_value<uint64_t>(lock_addr(a)) & ~Geometry::kLock;
          }
          leaf_read = with_leaf;
          return old;
        }
        t_->lock_retries_.fetch_add(1, std::memory_order_relaxed);
        c_->pause();
      }
    }
    // On an error path (pool exhausted, transport failure) under the leaf lock: restore the lock
    // word as it was when taken, so that the other clients see the error instead of waiting for
    // this lock forever. Nothing of the leaf was written yet on those paths.
    void release_after_error() noexcept {
      if (!held_) return;
      GlobalAddress a = held_;
      held_ = GlobalAddress{};
      try {
        unlock(a, held_word_);
      } catch (...) {  // the transport failed: the original error is the one to report
      }
    }
    void unlock(GlobalAddress a, uint64_t word) {
      held_ = GlobalAddress{};
      uint64_t w = word & ~Geometry::kLock;
      c_->write(lock_addr(a), &w, 8);
    }
    // Writes entry ranges and the new lock word (unlock) in one batch: one round trip.
    void write_back_and_unlock(GlobalAddress a, const std::vector<Segment>& segs, uint64_t word) {
      held_ = GlobalAddress{};  // from here on the release is under way
      Batch b;
      for (auto s : segs) img_.write_into(b, a, s, false);
      img_.w[g().lock_word()] = word & ~Geometry::kLock;
      b.write(lock_addr(a), &img_.w[g().lock_word()], 8);
      c_->run(b);
    }

    // Key at argmax (the leaf's largest key, live or tombstone); false when the leaf is empty.
    bool max_key(GlobalAddress a, uint64_t word, Key* out) {
      uint32_t i = g().argmax(word);
      if (!img_.have_e[i]) fetch(a, {{g().entry_word(i), g().entry_word(i) + g().ew()}});
      if (!img_.occupied(i)) return false;
      *out = img_.key(i);
      return true;
    }
    // Under the lock, after a sibling mismatch seen through a fresh parent: does k belong to
    // this leaf (range ends at max+1 since its last split) or to the right?
    bool belongs_right(GlobalAddress a, uint64_t word, Key k) {
      for (uint32_t i = 0; i < g().span(); ++i)
        if (img_.have_e[i] && img_.occupied(i) && img_.key(i) >= k) return false;
      Key mx;
      if (!max_key(a, word, &mx)) return false;
      return k > mx;
    }

    [[gnu::noinline]] bool write_op(Key k, std::string_view v, Op op) {
      try {
        return write_op_locking(k, v, op);
      } catch (...) {
        release_after_error();
        throw;
      }
    }
    void check_value(std::string_view v) const {
      if (v.size() > g().value_size())
        throw LimitError("chime: value of " + std::to_string(v.size()) +
                         " bytes exceeds value_size " + std::to_string(g().value_size()));
    }
    bool write_op_locking(Key k, std::string_view v, Op op) {
      if (op != Op::kRemove) check_value(v);
      std::vector<uint64_t> val(g().vw());
      if (op != Op::kRemove) btree::store_value(val.data(), v, g().value_size());
      uint32_t home = g().home(k);
      for (;;) {
        btree::Located loc = t_->core_.locate(*c_, k);
        GlobalAddress a = loc.leaf;
        for (;;) {
          bool leaf_read = false;
          uint64_t word = lock_leaf(a, leaf_read);
          if (!leaf_read) {
            img_.forget();
            fetch(a, op == Op::kInsert ? insert_segments(home, word) : neighborhood_segments(home),
                  true);
          }
          GlobalAddress sib = img_.sibling();
          if (loc.from_cache && sib != loc.next) {
            unlock(a, word);
            t_->core_.cache().invalidate(loc.parent);
            break;  // re-locate through fresh internal nodes
          }
          int i = find_in_neighborhood(k, home);
          if (i < 0 && sib != loc.next && belongs_right(a, word, k)) {
            unlock(a, word);
            t_->sibling_moves_.fetch_add(1, std::memory_order_relaxed);
            a = sib;
            continue;
          }
          uint8_t nv = 0;
          img_.consistent(&nv);  // under the lock: stable; just the current node version
          switch (op) {
            case Op::kUpdate:
            case Op::kRemove:
              if (i < 0 || img_.tomb(i)) {
                unlock(a, word);
                return false;
              }
              if (op == Op::kUpdate) {
                img_.set_entry(i, nv, Geometry::kOccupied, img_.hop(i), k, val.data());
                write_back_and_unlock(a, img_.entry_range(i, i, false), word);
              } else {
                remove_at(a, static_cast<uint32_t>(i), home, nv, word);
              }
              return true;
            case Op::kInsert:
              if (i >= 0) {
                if (!img_.tomb(i)) {
                  unlock(a, word);
                  return false;
                }
                img_.set_entry(i, nv, Geometry::kOccupied, img_.hop(i), k, val.data());  // revive
                write_back_and_unlock(a, img_.entry_range(i, i, false), word);
                return true;
              }
              if (injected(t_->opts_.faults.ack_without_write)) {
                unlock(a, word);
                return true;
              }
              if (hop_insert(a, k, val.data(), home, nv, word)) return true;
              split(a, nv, word);
              goto relocate;  // retry the insert against the split leaves
          }
        }
      relocate:;
      }
    }

    // Deleting the leaf's largest key would move its max+1 routing boundary (sibling-based
    // validation relies on it), so that key stays as a tombstone; others are cleared.
    void remove_at(GlobalAddress a, uint32_t i, uint32_t home, uint8_t nv, uint64_t word) {
      if (g().argmax(word) == i) {
        img_.set_entry(i, nv, Geometry::kOccupied | Geometry::kTombstone, img_.hop(i), img_.key(i),
                       img_.value(i));
        write_back_and_unlock(a, img_.entry_range(i, i, false), word);
        return;
      }
      img_.set_entry(i, nv, 0, img_.hop(i), 0, nullptr);
      uint32_t d = g().dist(home, i);
      img_.reseal(home, nv, img_.emeta(home).flags,
                  static_cast<uint16_t>(img_.hop(home) & ~(1u << d)));
      word = g().with_bucket(word, g().bucket(i), false);
      write_back_and_unlock(a, img_.entry_range(home, i, false), word);
    }

    // Hop range for an insert: from home's group replica to the end of the first bucket after
    // home that the piggybacked vacancy bitmap shows non-full, and at least the neighborhood
    // (to find an existing key). Wrapping ranges read the whole leaf.
    std::vector<Segment> insert_segments(uint32_t home, uint64_t word) {
      std::vector<Segment> segs;
      uint32_t last = home + g().h() - 1;
      bool whole = !t_->opts_.hopscotch_leaf || last >= g().span();
      if (!whole) {
        uint32_t b = g().bucket(home);
        while (b < g().vbits() && (g().bucket_full(word, b) || g().bucket_end(b) < home)) ++b;
        if (b >= g().vbits())
          whole = true;
        else
          last = std::max(last, g().bucket_end(b));
      }
      if (whole) {
        segs.push_back({0, g().node_words()});
      } else {
        segs.push_back({g().replica_word(home / g().h()), g().entry_word(last) + g().ew()});
      }
      uint32_t am = g().argmax(word);  // the max key, for sibling checks and argmax upkeep
      size_t aw = g().entry_word(am);
      if (!(aw >= segs[0].from && aw + g().ew() <= segs[0].to)) segs.push_back({aw, aw + g().ew()});
      return segs;
    }

    // Hopscotch insert on the local image. False when no feasible hop exists (split needed).
    bool hop_insert(GlobalAddress a, Key k, const uint64_t* val, uint32_t home, uint8_t nv,
                    uint64_t word) {
      const Geometry& geo = g();
      for (int attempt = 0; attempt < 2; ++attempt) {
        int jj = -1;
        bool need_whole = false;
        for (uint32_t d = 0; d < geo.span(); ++d) {
          uint32_t i = (home + d) % geo.span();
          if (!img_.have_e[i]) {
            need_whole = true;
            break;
          }
          if (!img_.occupied(i)) {
            jj = static_cast<int>(i);
            break;
          }
        }
        if (need_whole && attempt == 0) {  // vacancy bits were conservative: read the rest
          fetch(a, {{0, geo.node_words()}});
          continue;
        }
        if (jj < 0) return false;
        uint32_t j = static_cast<uint32_t>(jj), j0 = j;
        uint32_t am = geo.argmax(word);
        while (geo.dist(home, j) >= geo.h()) {
          bool moved = false;
          for (uint32_t off = geo.h() - 1; off >= 1 && !moved; --off) {
            uint32_t h = (j + geo.span() - off) % geo.span();
            if (!img_.have_e[h] || !img_.occupied(h)) continue;
            uint32_t h0 = geo.home(img_.key(h));
            if (!img_.have_e[h0] || geo.dist(h0, j) >= geo.h() || geo.dist(h0, h) > geo.dist(h0, j))
              continue;
            // Move h -> j; hop bitmaps belong to slots, not to the keys moving through them.
            Meta mh = img_.emeta(h);
            img_.set_entry(j, nv, mh.flags, img_.hop(j), img_.key(h), img_.value(h));
            img_.set_entry(h, nv, 0, img_.hop(h), 0, nullptr);
            uint16_t hb = img_.hop(h0);
            hb = static_cast<uint16_t>((hb & ~(1u << geo.dist(h0, h))) | (1u << geo.dist(h0, j)));
            img_.reseal(h0, nv, img_.emeta(h0).flags, hb);
            if (am == h) am = j;
            j = h;
            moved = true;
          }
          if (!moved) return false;
        }
        img_.set_entry(j, nv, Geometry::kOccupied, img_.hop(j), k, val);
        img_.reseal(home, nv, img_.emeta(home).flags,
                    static_cast<uint16_t>(img_.hop(home) | (1u << geo.dist(home, j))));
        // New lock word: argmax follows moves and the new key; the filled bucket's bit is set
        // only when all of its entries are known full (a stale 0 just costs a wider read).
        Key mx;
        bool nonempty = img_.have_e[am] && img_.occupied(am) && (mx = img_.key(am), true);
        if (!nonempty || k > mx) am = j;
        uint64_t nw = geo.with_argmax(word, am);
        uint32_t b = geo.bucket(j0);
        bool full = true;
        for (uint32_t i = geo.bucket_start(b); i <= geo.bucket_end(b); ++i)
          full = full && img_.have_e[i] && img_.occupied(i);
        nw = geo.with_bucket(nw, b, full);
        write_back_and_unlock(a, img_.entry_range(home, j0, false), nw);
        return true;
      }
      return false;
    }

    // Leaf split under the lock: keys above the median move to a new leaf at the same slots
    // (hop bitmaps stay valid); new leaf written first, then the old leaf with its unlock; the
    // separator published upward is max(old) + 1, matching the argmax rule.
    void split(GlobalAddress a, uint8_t nv, uint64_t word) {
      const Geometry& geo = g();
      (void)word;
      if (!img_.whole()) fetch(a, {{0, geo.node_words()}});
      std::vector<std::pair<Key, uint32_t>> live;
      for (uint32_t i = 0; i < geo.span(); ++i)
        if (img_.occupied(i) && !img_.tomb(i)) live.emplace_back(img_.key(i), i);
      if (live.size() < 2)
        throw LimitError("chime: leaf cannot split (neighborhood too small for its keys)");
      std::sort(live.begin(), live.end());
      size_t m = live.size() / 2;
      Key sep = live[m - 1].first + 1;
      uint8_t nnv = static_cast<uint8_t>(nv + 1);
      GlobalAddress na = t_->alloc_leaf(*c_);
      GlobalAddress old_sib = img_.sibling_of(0);

      LeafImage right(geo);
      for (uint32_t i = 0; i < geo.span(); ++i) right.set_entry(i, nnv, 0, 0, 0, nullptr);
      for (size_t x = m; x < live.size(); ++x) {
        uint32_t i = live[x].second;
        right.set_entry(i, nnv, Geometry::kOccupied, 0, img_.key(i), img_.value(i));
      }
      for (uint32_t i = 0; i < geo.span(); ++i)
        if (img_.occupied(i) && (img_.tomb(i) || img_.key(i) >= sep))
          img_.set_entry(i, nnv, 0, 0, 0, nullptr);
      right.rebuild_hops(nnv);
      img_.rebuild_hops(nnv);
      for (uint32_t r = 0; r < geo.groups(); ++r) {
        right.set_replica(r, nnv, old_sib);
        img_.set_replica(r, nnv, na);
      }
      right.w[geo.lock_word()] = right.exact_lock_word();
      img_.w[geo.lock_word()] = img_.exact_lock_word();  // written with the node: unlocks it
      Batch nb, ob;
      right.write_into(nb, na, {0, geo.node_words() + 1}, true);
      c_->run(nb);
      held_ = GlobalAddress{};  // from here on the release is under way
      img_.write_into(ob, a, {0, geo.node_words() + 1}, true);
      c_->run(ob);
      t_->splits_.fetch_add(1, std::memory_order_relaxed);
      t_->leaves_.fetch_add(1, std::memory_order_relaxed);
      t_->core_.insert_separator(*c_, 1, sep, na, a);
    }

    std::shared_ptr<Tree> t_;
    Client<T>* c_;
    LeafImage img_;
    // A parallel scan's leaves, images and batches (kept: no allocation per scan once warm).
    static constexpr size_t kMaxScanBatch = 32;
    std::vector<GlobalAddress> scan_plan_;
    std::vector<LeafImage> scan_imgs_;
    std::vector<Batch> scan_batches_;
    GlobalAddress held_;      // the leaf lock this handle holds, if any
    uint64_t held_word_ = 0;  // its lock word as found when taken (lock bit clear)
  };
};

// The name every index namespace offers (runtime/index.h's Index concept).
template <Transport T>
using Index = Tree<T>;

}  // namespace dmrt::chime
