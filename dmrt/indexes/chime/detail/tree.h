// CHIME (SOSP '24): B+ tree upper levels (cached) over hopscotch-hashed leaves, with three-level
// optimistic synchronization, piggybacked vacancy bitmaps, replicated leaf metadata,
// sibling-based validation and hotness-aware speculative reads.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <optional>

#include "dmrt/indexes/chime/detail/hotspot.h"
#include "dmrt/indexes/chime/detail/leaf.h"
#include "dmrt/indexes/chime/detail/options.h"
#include "dmrt/indexes/common/btree_core.h"
#include "dmrt/indexes/common/faults.h"
#include "dmrt/indexes/common/keyed_tree.h"
#include "dmrt/indexes/common/kv_block.h"
#include "dmrt/indexes/common/rdwc.h"
#include "dmrt/indexes/common/striped.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::chime {

// The tree over one key policy K (dmrt/indexes/common/btree_keys.h): IntKeys (key_size 8, the
// paper's integer keys) or ByteKeys (keys of 1..key_size bytes inline in the leaf entries).
// Tree<T> below picks one from Options::key_size.
template <Transport T, class K>
class BasicTree : public std::enable_shared_from_this<BasicTree<T, K>> {
 public:
  using Options = chime::Options;
  using Tree = BasicTree;
  using View = typename K::View;
  using KeyT = typename K::Key;
  using Leaf = LeafImage<K>;
  using Core = btree::BTreeCore<T, K>;
  class Handle;

  // Leaves hold keys of up to key_size bytes. Internal nodes one more: a leaf split publishes
  // the successor of the left leaf's largest key (that key + a 0x00 byte), the max+1 boundary
  // that sibling-based validation relies on (see split()).
  static K leaf_keys(const Options& o) {
    if constexpr (K::kBytes)
      return K{o.key_size};
    else
      return K{};
  }
  static K core_keys(const Options& o) {
    if constexpr (K::kBytes)
      return K{o.key_size + 1};
    else
      return K{};
  }

  [[gnu::noinline]] static std::shared_ptr<Tree> create(Client<T>& c, const Options& o) {
    auto t = std::shared_ptr<Tree>(new Tree(c, o));
    Leaf img(t->geo_, t->keys_);
    for (uint32_t r = 0; r < t->geo_.groups(); ++r) img.set_replica(r, 1, GlobalAddress::null());
    for (uint32_t i = 0; i < t->geo_.span(); ++i) img.set_entry(i, 1, 0, 0, View{}, nullptr);
    img.w[t->geo_.lock_word()] = 0;
    GlobalAddress leaf = t->alloc_leaf(c);
    Batch b;
    img.write_hint = FlushHint::kWriteBack;  // setup: written back whatever the flush points
    img.write_into(b, leaf, {0, t->geo_.node_words() + 1}, true);
    c.run(b);
    Core::publish_root(c, t->core_.root_slot(), {0, leaf});
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
                 {"locks_taken_over", static_cast<double>(takeovers_.load() + cs.takeovers.load())},
                 {"scan_windows", static_cast<double>(scan_windows_.load())},
                 {"scan_partial_leaves", static_cast<double>(scan_partial_leaves_.load())},
                 {"line_versions", geo_.versions() ? 1.0 : 0.0},
                 {"fence_keys", geo_.fences() ? 1.0 : 0.0},
                 {"metadata_bytes_per_entry", geo_.metadata_bytes_per_entry()}};
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
  BasicTree(Client<T>& c, const Options& o)
      : opts_(validate(c, o)),
        geo_(o.span, o.neighborhood, o.indirect ? 8 : o.value_size,  // indirect: a pointer word
             o.resolved_sync(c.line_atomic()) == Sync::kVersions, o.key_size, !o.sibling_validation,
             o.lock_holders),
        keys_(leaf_keys(o)),
        hot_(o.speculative_read ? o.hotspot_bytes : 0),
        core_(layout::root_slot(first_memory_node(c), o.root_slot), o.internal_span, o.cache_bytes,
              nullptr, 0, false, core_keys(o)),
        rdwc_(o.rdwc ? rdwc::Combiner::kSlots : 1, rdwc::Combiner::kLimit) {
    core_.set_flushes(btree::core_flushes(o.faults.skip_flush));
  }

  static const Options& validate(Client<T>& c, const Options& o) {
    if (o.value_size == 0 || o.value_size > 1024)
      throw ConfigError("chime: value_size must be in [1, 1024]");
    validate_option_fields("chime", o);  // each field's range (Options::fields())
    if (o.key_size == 0 || o.key_size > kMaxKeyBytes)
      throw ConfigError("chime: key_size must be in [1, " + std::to_string(kMaxKeyBytes) + "]");
    if (K::kBytes == (o.key_size == kIntegerKeyBytes))
      throw ConfigError("chime: key policy does not match key_size");  // Tree<T> picks it
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
  K keys_;  // the leaves' key slots
  HotspotBuffer hot_;
  Core core_;
  rdwc::Combiner rdwc_;  // this compute node's (one Tree per compute node)
  // Striped: a hot key's speculative hits on every thread would otherwise bounce one line.
  btree::StripedCounter leaves_, splits_, spec_hits_, spec_misses_, sibling_moves_, read_retries_,
      lock_retries_, scan_windows_, scan_partial_leaves_, takeovers_;

 public:
  class Handle {
   public:
    Handle(std::shared_ptr<Tree> t, Client<T>& c)
        : t_(std::move(t)), c_(&c), img_(t_->geo_, t_->keys_) {
      const auto& skip = t_->opts_.faults.skip_flush;
      img_.read_hint = flush_hint(skip, FlushPoint::kLeafInvalidate, FlushHint::kInvalidate);
      img_.write_hint = flush_hint(skip, FlushPoint::kLeafWriteBack, FlushHint::kWriteBack);
    }

    // 1 RTT (neighborhood or speculative entry), 2 when a speculation misses; none when another
    // search of k on this compute node shares its result (RDWC).
    [[gnu::noinline]] bool search(View k, std::string& out) {
      if (t_->opts_.rdwc)
        return t_->rdwc_.run(*c_, k, false, {}, &out, [&](std::string_view, std::string* o) {
          return search_direct(k, *o);
        });
      return search_direct(k, out);
    }
    bool insert(View k, std::string_view v) { return write_op(k, v, Op::kInsert); }
    // With RDWC, concurrent updates of k on this compute node are combined: one of them writes the
    // last queued value for all (inserts and deletes run themselves, dmrt/indexes/common/rdwc.h).
    bool update(View k, std::string_view v) {
      if (!t_->opts_.rdwc) return write_op(k, v, Op::kUpdate);
      check_value(v);  // before queueing: a bad value must fail only its own caller
      return t_->rdwc_.run(*c_, k, true, v, nullptr, [&](std::string_view wv, std::string*) {
        return write_op(k, wv, Op::kUpdate);
      });
    }
    bool remove(View k) { return write_op(k, {}, Op::kRemove); }

    // Rows in key order. A round reads the leaves that the cached level-1 nodes name from the
    // scan's position (§3.9: in one round trip, a batch per memory node; `parallel_scan`). What
    // it reads of each (§4.4, `scan_intersection`): where keys are integer-dense (the first
    // leaf's cached key interval is at most kDenseSpans spans wide, as YCSB's keys in their
    // insertion order), a round covers the key window [lo, lo + w), w = the rows still wanted
    // (doubled in each further round, for gaps): a leaf whose interval lies inside the window is
    // read whole, one that the window covers in part only in the neighborhoods of the integer
    // keys it covers there ("analyze neighborhood intersections of target keys and exclude
    // unnecessary entries for each read"), merged into READs of up to half a leaf. Elsewhere
    // (sparse keys: which keys lie in a range is unknown, notes A12) whole leaves, enough for
    // `count` rows if each holds span/2 live keys. A leaf's sibling pointer must name the next
    // leaf of the batch; where a split put a new leaf between them, the rest of the batch is
    // dropped and the scan goes on from the sibling (or reads the split leaf again whole when the
    // window cut it). Byte keys are never integer-dense: their scans read whole leaves.
    [[gnu::noinline]] void scan(View from, size_t count,
                                std::vector<std::pair<KeyT, std::string>>& rows) {
      rows.clear();
      if (count == 0) return;
      const Geometry& g = t_->geo_;
      GlobalAddress a = t_->core_.locate(*c_, from).leaf;
      KeyT lower = KeyT(from);  // the keys below are done
      bool any = false, whole_next = false;
      KeyT last{};
      uint64_t window = 0;
      std::vector<std::pair<View, uint32_t>> ks;
      auto take = [&](const Leaf& img, const KeyT* to) {  // to = null: no upper bound
        ks.clear();
        for (uint32_t i = 0; i < g.span(); ++i)
          if (img.have_e[i] && img.occupied(i) && !img.tomb(i) && img.key(i) >= K::view(lower) &&
              (!any || img.key(i) > K::view(last)) && (!to || img.key(i) < K::view(*to)))
            ks.emplace_back(img.key(i), i);
        std::sort(ks.begin(), ks.end());
        for (auto& [k, i] : ks) {
          if (rows.size() == count) break;
          std::string v;
          btree::load_value(img.value(i), g.value_size(), v);
          rows.emplace_back(KeyT(k), std::move(v));
          last = KeyT(k);
          any = true;
        }
      };
      while (a && rows.size() < count) {
        KeyT lo;  // the first key not done
        if constexpr (K::kBytes) {
          lo = lower;  // (unused: no key window)
        } else {
          if (any && last == std::numeric_limits<Key>::max()) break;
          lo = any ? std::max(lower, last + 1) : lower;
        }
        KeyT to{};
        const bool win = plan_scan_batch(a, K::view(any && last > lower ? last : lower), lo,
                                         count - rows.size(), !whole_next, window, to);
        whole_next = false;
        if (!win && scan_plan_.size() == 1) {
          read_whole_consistent(a);
          take(img_, nullptr);
          a = img_.sibling();
          continue;
        }
        read_leaves_consistent();
        if (!win) {
          for (size_t i = 0; i < scan_plan_.size() && rows.size() < count; ++i) {
            take(scan_imgs_[i], nullptr);
            a = scan_imgs_[i].sibling();
            if (i + 1 < scan_plan_.size() && a != scan_plan_[i + 1]) break;  // a split between
          }
          continue;
        }
        bool split = false;
        for (size_t i = 0; i < scan_plan_.size() && rows.size() < count; ++i) {
          take(scan_imgs_[i], &to);
          const GlobalAddress sib = scan_imgs_[i].sibling();
          if (sib == scan_next_[i]) continue;
          // A split since the node was cached. Its keys at or above `to` were not taken: read it
          // again whole; else go on from the sibling (the new leaf holds only larger keys).
          split = true;
          const ScanInterval& iv = scan_iv_[i];
          if (iv.hi_inf || iv.hi > to) {
            a = scan_plan_[i];
            whole_next = true;
          } else {
            a = sib;
          }
          break;
        }
        if (split || rows.size() == count) continue;
        lower = to;  // every key of [lo, to) was read
        const ScanInterval& back = scan_iv_.back();
        a = back.hi_inf || back.hi > to ? scan_plan_.back() : scan_next_.back();
      }
      if (t_->opts_.indirect) read_blocks(rows);
    }

    Client<T>& client() { return *c_; }

   private:
    bool search_direct(View k, std::string& out) {
      const Geometry& g = t_->geo_;
      auto [home, fp] = g.home_fp(k);
      for (;;) {
        typename Core::Located loc = t_->core_.locate(*c_, k);
        if (t_->opts_.speculative_read && speculate(loc.leaf, k, home, fp, out)) return true;
        GlobalAddress a = loc.leaf;
        bool restart = false;
        unsigned hops = 0;  // sibling moves since this locate (kMaxHops)
        for (;;) {
          read_neighborhood(a, home);
          GlobalAddress sib = img_.sibling();
          if (g.fences()) {  // the baseline: k outside the fences
            if (!in_fences(k)) {
              if (loc.from_cache || !beyond_high(k)) {  // a stale cached parent
                if (loc.from_cache) t_->core_.cache().invalidate(loc.parent);
                restart = true;
                break;
              }
              if (++hops > kMaxHops) {  // not a recent split: a stale start (see kMaxHops)
                restart = true;
                break;
              }
              t_->sibling_moves_.fetch_add(1, std::memory_order_relaxed);  // half split
              a = sib;
              continue;
            }
          } else if (loc.from_cache && sib != loc.next) {  // SBV: cached parent is stale
            t_->core_.cache().invalidate(loc.parent);
            restart = true;
            break;
          }
          int i = find_in_neighborhood(k, home);
          if (i >= 0) {
            if (img_.tomb(i)) return false;
            t_->hot_.touch(a, static_cast<uint32_t>(i), fp);
            load_entry_value(img_, static_cast<uint32_t>(i), out);
            return true;
          }
          if (!injected(t_->opts_.faults.skip_bitmap_check) &&
              !img_.bitmap_matches(home)) {  // level 3
            t_->read_retries_.fetch_add(1, std::memory_order_relaxed);
            c_->pause();
            continue;
          }
          if (!g.fences() && sib != loc.next) {  // half split: the key may have moved right
            if (++hops > kMaxHops) {             // not a recent split: a stale start (see kMaxHops)
              restart = true;
              break;
            }
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
    // Sibling moves one locate may take before it locates again. A leaf split after its parent
    // was read is one or two moves away; more means the walk started far from the key: from a
    // root that was still a single leaf when the operation began (the start of a load, when every
    // client locates the first leaf). Walking on from there is one round trip per leaf of the
    // whole tree, which at 60 M keys grew faster than the walk (an insert that never ended).
    static constexpr unsigned kMaxHops = 8;
    const Geometry& g() const { return t_->geo_; }
    GlobalAddress lock_addr(GlobalAddress a) const { return a + g().lock_offset(); }

    // Hotness-aware speculative read: the hottest buffered slot of the neighborhood whose
    // fingerprint matches; one entry READ; a hit needs a sealed, live entry holding k.
    bool speculate(GlobalAddress leaf, View k, uint32_t home, uint16_t fp, std::string& out) {
      if (!t_->hot_.enabled()) return false;
      uint32_t best = 0, best_i = 0;
      const uint32_t span = g().span();
      for (uint32_t d = 0, i = home; d < g().h(); ++d, i = i + 1 == span ? 0 : i + 1) {
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
        load_entry_value(img_, best_i, out);
        return true;
      }
      t_->spec_misses_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }

    // The value of entry i of `img`: inline, or (indirect) the KV block its pointer names, READ
    // in one more round trip.
    void load_entry_value(const Leaf& img, uint32_t i, std::string& out) {
      if (!t_->opts_.indirect) return btree::load_value(img.value(i), g().value_size(), out);
      Batch b;
      kvblock::read_into(b, img.value(i)[0], block_buf_);
      c_->run(b);
      kvblock::decode(block_buf_, t_->opts_.value_size, out);
    }
    // Indirect scans: the rows hold their entries' pointer words; every row's block is READ in
    // one more round trip (a batch per memory node, posted together).
    void read_blocks(std::vector<std::pair<KeyT, std::string>>& rows) {
      if (rows.empty()) return;
      if (scan_blocks_.size() < rows.size()) scan_blocks_.resize(rows.size());
      scan_batches_.clear();
      for (size_t r = 0; r < rows.size(); ++r) {
        uint64_t p = 0;
        std::memcpy(&p, rows[r].second.data(), sizeof p);
        const NodeId n = kvblock::address(p).node();
        auto it = std::find_if(scan_batches_.begin(), scan_batches_.end(), [&](const Batch& b) {
          return b.node() == n && b.size() < Batch::kMaxVerbs;
        });
        if (it == scan_batches_.end()) it = scan_batches_.emplace(scan_batches_.end());
        kvblock::read_into(*it, p, scan_blocks_[r]);
      }
      c_->run(std::span<Batch>(scan_batches_));
      for (size_t r = 0; r < rows.size(); ++r)
        kvblock::decode(scan_blocks_[r], t_->opts_.value_size, rows[r].second);
    }

    int find_in_neighborhood(View k, uint32_t home) const {
      const uint32_t span = g().span();
      for (uint32_t d = 0, i = home; d < g().h(); ++d, i = i + 1 == span ? 0 : i + 1)
        if (img_.have_e[i] && img_.occupied(i) && img_.key(i) == k) return static_cast<int>(i);
      return -1;
    }

    // Segments an access to k's neighborhood reads (whole leaf without hopscotch reads).
    Segments neighborhood_segments(uint32_t home) const {
      if (!t_->opts_.hopscotch_leaf) return {{0, g().node_words()}};
      return img_.entry_range(home, (home + g().h() - 1) % g().span(), true);
    }
    // Reads `segs` in one batch. With `with_metadata` and replication off (the factor analysis
    // before its replication step), the leaf's metadata is its header alone: replicas the
    // segments happen to cover are not relied on, and the header is one more READ in the same
    // batch unless the segments cover it already (a whole leaf does). Same round trip, one more
    // verb and 16 B: what replication saves.
    void fetch(GlobalAddress a, const Segments& segs, bool with_metadata = false) {
      Batch b;
      bool header = false;
      for (auto s : segs) {
        img_.read_into(b, a, s);
        header = header || (s.from == 0 && s.to >= g().rw());
      }
      if (with_metadata && !t_->opts_.metadata_replication) {
        std::fill(img_.have_r.begin(), img_.have_r.end(), 0);
        if (!header) img_.read_into(b, a, {0, g().rw()});
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
    // A leaf's key interval as a cached level-1 node names it, [lo, hi) (hi_inf: no end). Only
    // splits change leaves' ranges here (no merges), and a split only shrinks one, so a leaf holds
    // no key outside what any cached node once said.
    struct ScanInterval {
      bool known = false, hi_inf = false;
      KeyT lo{}, hi{};
    };
    static ScanInterval interval_of(const typename Core::InternalNode& n, size_t p) {
      ScanInterval iv;
      iv.known = true;
      iv.lo = p == 0 ? n.lo : n.keys[p - 1];
      iv.hi_inf = p == n.count() && n.hi_inf;
      iv.hi = p < n.count() ? n.keys[p] : n.hi;
      return iv;
    }
    static constexpr uint64_t kDenseSpans = 4;

    // Plans one round from `a`, which holds k or is the leaf right after the one that does: the
    // leaves the cached level-1 nodes name from `a` on (crossing into the next cached node), with
    // their intervals and the next leaf each names. Returns whether the round covers a key window
    // (`scan_intersection` on integer-dense keys and `window_ok`; see scan()): then it sets `to`
    // (the window [lo, to) clipped to the planned leaves) and each leaf's READ segments (none =
    // whole) and homes to validate. Else the leaves are read whole: enough for `want` rows at
    // span/2 live keys per leaf. Just `a` without parallel_scan, or when no cached node names it.
    // Byte keys: never a window (scan_intersection needs integer-dense keys).
    bool plan_scan_batch(GlobalAddress a, View k, const KeyT& lo, size_t want, bool window_ok,
                         uint64_t& window, KeyT& to) {
      scan_plan_.assign(1, a);
      scan_iv_.assign(1, ScanInterval{});
      scan_next_.assign(1, GlobalAddress{});
      scan_segs_.resize(1);
      scan_segs_[0].clear();
      auto n = t_->core_.cache().find(k, 1);
      if (!n || n->level != 1) return false;
      size_t p = n->child_pos(k);
      if (n->child_at(p) != a && n->next_of(p) == a) ++p;  // k is the previous leaf's last key
      if (p > n->count()) {                                // a starts the next node
        if (n->hi_inf || !(n = t_->core_.cache().find(n->hi, 1)) || n->level != 1) return false;
        p = 0;
      }
      if (n->child_at(p) != a) return false;
      scan_iv_[0] = interval_of(*n, p);
      scan_next_[0] = n->next_of(p);
      const ScanInterval& first = scan_iv_[0];
      bool win = false;
      uint64_t w = 0;
      if constexpr (!K::kBytes) {
        win = window_ok && t_->opts_.scan_intersection && t_->opts_.hopscotch_leaf &&
              !first.hi_inf && first.hi - first.lo <= kDenseSpans * g().span();
        w = std::max<uint64_t>(window * 2, want);
        if (win && lo > std::numeric_limits<Key>::max() - w) win = false;  // no window end
      } else {
        (void)window_ok;
      }
      size_t leaves;
      if (win) {
        if constexpr (!K::kBytes) {
          window = w;
          to = lo + w;
        }
        leaves = kMaxScanBatch;
      } else {
        const size_t per_leaf = std::max<size_t>(1, g().span() / 2);
        leaves = std::min<size_t>((want + per_leaf - 1) / per_leaf, kMaxScanBatch);
      }
      if (!t_->opts_.parallel_scan) leaves = 1;
      auto add = [&](const typename Core::InternalNode& node, size_t q) {
        ScanInterval iv = interval_of(node, q);
        if (scan_plan_.size() == leaves || (win && iv.lo >= to)) return false;
        scan_plan_.push_back(node.child_at(q));
        scan_iv_.push_back(iv);
        scan_next_.push_back(node.next_of(q));
        return true;
      };
      for (bool more = leaves > 1 && (!win || first.hi < to); more;) {
        for (size_t q = p + 1; q <= n->count() && more; ++q) more = add(*n, q);
        if (!more || n->hi_inf) break;
        const GlobalAddress next_first = n->sibling_leftmost;
        if (!(n = t_->core_.cache().find(n->hi, 1)) || n->level != 1 ||
            n->child_at(0) != next_first)
          break;
        more = add(*n, 0);
        p = 0;
      }
      scan_segs_.resize(scan_plan_.size());
      for (auto& segs : scan_segs_) segs.clear();  // whole, unless planned below
      if (!win) return false;
      if constexpr (K::kBytes) {
        return false;
      } else {
        const ScanInterval& back = scan_iv_.back();
        if (!back.hi_inf) to = std::min(to, back.hi);  // the window ends where the plan does
        if (to <= lo) return false;                    // `a` ends before lo: read it whole
        scan_homes_.resize(scan_plan_.size());
        for (size_t i = 0; i < scan_plan_.size(); ++i) {
          const ScanInterval& iv = scan_iv_[i];
          const Key c_lo = std::max(iv.lo, lo), c_hi = iv.hi_inf ? to : std::min(iv.hi, to);
          scan_segs_[i].clear();
          scan_homes_[i].clear();
          // Whole: the window covers the leaf's interval (the paper reads such leaves whole), or
          // so many integers that every home may be one.
          if (c_lo >= c_hi || (c_lo == iv.lo && !iv.hi_inf && c_hi == iv.hi) ||
              c_hi - c_lo >= g().span())
            continue;
          intersect_segments(c_lo, c_hi, scan_segs_[i], scan_homes_[i]);
          if (!scan_segs_[i].empty())
            t_->scan_partial_leaves_.fetch_add(1, std::memory_order_relaxed);
        }
        t_->scan_windows_.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    }
    // The neighborhoods of the keys [c_lo, c_hi) (fewer than span of them): their homes, and the
    // READ segments covering them, runs of entries merged greedily while a READ stays within half
    // a leaf. None when they cover the whole leaf.
    void intersect_segments(Key c_lo, Key c_hi, std::vector<Segment>& segs,
                            std::vector<uint32_t>& homes) {
      const Geometry& geo = g();
      std::vector<uint8_t>& cover = scan_cover_;
      cover.assign(geo.span(), 0);
      homes.clear();
      for (Key k = c_lo; k < c_hi; ++k) homes.push_back(geo.home(k));
      std::sort(homes.begin(), homes.end());
      homes.erase(std::unique(homes.begin(), homes.end()), homes.end());
      for (uint32_t h : homes)
        for (uint32_t d = 0; d < geo.h(); ++d) cover[(h + d) % geo.span()] = 1;
      if (std::all_of(cover.begin(), cover.end(), [](uint8_t x) { return x; })) {
        homes.clear();
        return;
      }
      const uint64_t half = geo.remote_bytes() / 2;
      auto bytes = [&](uint32_t from, uint32_t to) {
        auto [b0, b1] = geo.remote_range(img_.entry_range(from, to, true)[0]);
        return b1 - b0;
      };
      int run_from = -1, run_to = -1;
      for (uint32_t i = 0; i <= geo.span(); ++i) {
        if (i < geo.span() && !cover[i]) continue;
        if (i < geo.span() && run_from >= 0 &&
            (static_cast<int>(i) == run_to + 1 || bytes(run_from, i) <= half)) {
          run_to = static_cast<int>(i);  // extend the READ (over a gap, if any)
          continue;
        }
        if (run_from >= 0) {
          auto r = img_.entry_range(run_from, run_to, true);
          segs.insert(segs.end(), r.begin(), r.end());
        }
        if (i < geo.span()) run_from = run_to = static_cast<int>(i);
      }
    }
    // Reads the planned leaves in one round trip (one batch per memory node, posted together):
    // whole, or the planned segments. A leaf caught locked or torn (whole), or failing its homes'
    // hop bitmaps or showing a key twice (segments: levels 1-3 on what was read), is read again
    // alone and whole, as read_whole_consistent does.
    void read_leaves_consistent() {
      const uint32_t words = g().node_words() + 1;
      while (scan_imgs_.size() < scan_plan_.size()) {
        scan_imgs_.emplace_back(g(), t_->keys_);
        scan_imgs_.back().read_hint = img_.read_hint;
      }
      scan_segs_.resize(scan_plan_.size());
      scan_homes_.resize(scan_plan_.size());
      scan_batches_.clear();
      auto batch_for = [&](GlobalAddress leaf) -> Batch& {
        auto it = std::find_if(scan_batches_.begin(), scan_batches_.end(), [&](const Batch& b) {
          return b.node() == leaf.node() && b.size() < Batch::kMaxVerbs;
        });
        if (it == scan_batches_.end()) it = scan_batches_.emplace(scan_batches_.end());
        return *it;
      };
      for (size_t i = 0; i < scan_plan_.size(); ++i) {
        scan_imgs_[i].forget();
        if (scan_segs_[i].empty()) {
          scan_imgs_[i].read_into(batch_for(scan_plan_[i]), scan_plan_[i], {0, words});
          continue;
        }
        for (Segment s : scan_segs_[i])
          scan_imgs_[i].read_into(batch_for(scan_plan_[i]), scan_plan_[i], s);
      }
      c_->run(std::span<Batch>(scan_batches_));
      const bool skip = injected(t_->opts_.faults.skip_bitmap_check);
      for (size_t i = 0; i < scan_plan_.size(); ++i) {
        Leaf& img = scan_imgs_[i];
        img.finish_reads();
        bool ok;
        if (scan_segs_[i].empty()) {
          bool locked = img.w[g().lock_word()] & Geometry::kLock;
          ok = !locked && img.consistent(nullptr) && (skip || img.all_bitmaps_match());
        } else {
          ok = img.consistent(nullptr) && img.any_replica() &&
               (skip || (homes_match(img, scan_homes_[i]) && no_duplicates(img)));
        }
        if (ok) continue;
        t_->read_retries_.fetch_add(1, std::memory_order_relaxed);
        std::swap(img_, img);
        read_whole_consistent(scan_plan_[i]);
        std::swap(img_, img);
      }
    }
    static bool homes_match(const Leaf& img, const std::vector<uint32_t>& homes) {
      return std::all_of(homes.begin(), homes.end(),
                         [&](uint32_t h) { return img.bitmap_matches(h); });
    }
    // A READ racing a hop-range WRITE may show a moving key in both its slots (and hide another
    // of its home behind a matching bitmap): reject any key fetched twice.
    bool no_duplicates(const Leaf& img) {
      scan_keys_.clear();
      for (uint32_t i = 0; i < g().span(); ++i)
        if (img.have_e[i] && img.occupied(i)) scan_keys_.push_back(img.key(i));
      std::sort(scan_keys_.begin(), scan_keys_.end());
      return std::adjacent_find(scan_keys_.begin(), scan_keys_.end()) == scan_keys_.end();
    }

    // The lock word is fetched last in the same READ: a writer still holding it may be midway
    // through a hop range, so the image is retried rather than trusted to level 3 alone.
    void read_whole_consistent(GlobalAddress a) {
      HolderWatch watch;
      for (;;) {
        img_.forget();
        fetch(a, {{0, g().node_words() + 1}});
        const uint64_t lw = img_.w[g().lock_word()];
        bool locked = lw & Geometry::kLock;
        if (!locked && img_.consistent(nullptr) &&
            (injected(t_->opts_.faults.skip_bitmap_check) || img_.all_bitmaps_match()))
          return;
        t_->read_retries_.fetch_add(1, std::memory_order_relaxed);
        // Locked by a process that died: no writer may come by to take the lock over, so this
        // reader does, and lets go of the leaf as take_over leaves it.
        if (locked && watch.dead_tag(*c_, lw, g().holder(lw)) && take_lock_from(a, lw)) {
          const uint64_t word = take_over(a, lw);
          unlock(a, word);
          continue;
        }
        c_->pause();
      }
    }
    // The masked CAS that takes the lock of leaf `a` from a dead holder: from exactly the word it
    // left (one waiter wins), to the same word naming this client's process.
    bool take_lock_from(GlobalAddress a, uint64_t lw) {
      uint64_t old = 0;
      Batch b;
      b.masked_cas(lock_addr(a), lw, ~uint64_t{0}, g().holder_bits(c_->process_tag()),
                   g().holder_mask(), &old);
      c_->run(b);
      return old == lw;
    }
    // Under a lock just taken from a dead holder (`lw`: the word it left): the whole leaf, read
    // into the image, and its unlocked lock word. What the holder wrote whole stands: entries
    // (its write back sends them before the lock word), a split's left leaf (its right leaf is
    // reachable by the sibling pointer). The lock word it never released may no longer describe
    // the entries, so vacancy and argmax are computed from them. A leaf it left half written
    // (objects with different versions, a hop bitmap that misses a key) is an error naming it.
    uint64_t take_over(GlobalAddress a, uint64_t lw) {
      t_->takeovers_.fetch_add(1, std::memory_order_relaxed);
      held_ = a;
      held_word_ = lw & ~g().lock_mask();
      img_.forget();
      fetch(a, {{0, g().node_words() + 1}});
      if (!img_.consistent(nullptr) || !img_.all_bitmaps_match()) {
        held_ = GlobalAddress{};  // the leaf stays locked: nothing may trust it
        throw Error("chime: leaf " + a.to_string() + " was left half written by process tag " +
                    std::to_string(g().holder(lw)) + ", which died holding its lock");
      }
      held_word_ = img_.exact_lock_word();
      return held_word_;
    }

    // Masked CAS on the lock bit only: the old word (vacancy bitmap, argmax) comes back free.
    // Without hopscotch leaves the whole leaf and its lock word are READ in the same batch,
    // after the CAS, as Sherman does: the factor analysis's baseline write is Sherman's
    // [lock + READ leaf] ; [WRITE + unlock]. With hopscotch leaves but no piggybacking the
    // bitmap is a READ of its own once the lock is held (the round trip piggybacking saves,
    // §4.2); without it the bitmap bits of the returned word are not used.
    // `leaf_read` tells whether the image now holds the whole leaf.
    // `extra` (indirect items: the KV block's WRITE) goes with the first attempt, then is emptied.
    uint64_t lock_leaf(GlobalAddress a, bool& leaf_read, Batch* extra = nullptr) {
      const bool with_leaf = !t_->opts_.hopscotch_leaf;
      const uint64_t mine = Geometry::kLock | g().holder_bits(c_->process_tag());
      const uint64_t mask = g().lock_mask();
      HolderWatch watch;
      for (;;) {
        uint64_t old = 0;
        Batch b;
        b.masked_cas(lock_addr(a), 0, Geometry::kLock, mine, mask, &old);
        if (with_leaf) {
          img_.forget();
          img_.read_into(b, a, {0, g().node_words() + 1});
        }
        if (extra && !extra->empty()) {
          std::array<Batch, 2> both{b, *extra};
          c_->run(std::span<Batch>(both));
          *extra = Batch();
        } else {
          c_->run(b);
        }
        if (with_leaf) img_.finish_reads();
        if (!(old & Geometry::kLock)) {
          held_ = a;
          held_word_ = old;
          if (with_leaf) {
            if (!t_->opts_.metadata_replication) {  // the header alone, as in fetch()
              std::fill(img_.have_r.begin(), img_.have_r.end(), 0);
              img_.have_r[0] = 1;
            }
            if (!t_->opts_.vacancy_piggyback) held_word_ = old = img_.w[g().lock_word()] & ~mask;
          } else if (!t_->opts_.vacancy_piggyback) {
            held_word_ = old = c_->template read_value<uint64_t>(lock_addr(a)) & ~mask;
          }
          leaf_read = with_leaf;
          return old;
        }
        t_->lock_retries_.fetch_add(1, std::memory_order_relaxed);
        // A holder whose process was declared dead and fenced never lets go: take it over. The
        // extra batch (an indirect item's block) was posted with the first attempt already.
        if (watch.dead_tag(*c_, old, g().holder(old)) && take_lock_from(a, old)) {
          leaf_read = true;
          return take_over(a, old);
        }
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
      uint64_t w = word & ~g().lock_mask();
      c_->release(lock_addr(a), &w, 8);
    }
    // Writes entry ranges and the new lock word (unlock) in one batch: one round trip.
    void write_back_and_unlock(GlobalAddress a, const Segments& segs, uint64_t word) {
      held_ = GlobalAddress{};  // from here on the release is under way
      Batch b;
      for (auto s : segs) img_.write_into(b, a, s, false);
      img_.w[g().lock_word()] = word & ~g().lock_mask();
      b.release(lock_addr(a), &img_.w[g().lock_word()], 8);
      c_->run(b);
    }

    // Key at argmax (the leaf's largest key, live or tombstone); false when the leaf is empty.
    bool max_key(GlobalAddress a, uint64_t word, View* out) {
      uint32_t i = g().argmax(word);
      if (!img_.have_e[i]) fetch(a, {{g().entry_word(i), g().entry_word(i) + g().ew()}});
      if (!img_.occupied(i)) return false;
      *out = img_.key(i);
      return true;
    }
    // Fences only (sibling_validation off): k lies in the leaf's [low, high) by the replica
    // fetched (high is open on the rightmost leaf), or lies at or above high.
    bool beyond_high(View k) const {
      for (uint32_t r = 0; r < g().groups(); ++r)
        if (img_.have_r[r]) return img_.sibling_of(r) && k >= img_.high_fence(r);
      return false;
    }
    bool in_fences(View k) const {
      for (uint32_t r = 0; r < g().groups(); ++r)
        if (img_.have_r[r]) return k >= img_.low_fence(r) && !beyond_high(k);
      return true;
    }
    // Under the lock, after a sibling mismatch seen through a fresh parent: does k belong to
    // this leaf (range ends at max+1 since its last split) or to the right?
    bool belongs_right(GlobalAddress a, uint64_t word, View k) {
      for (uint32_t i = 0; i < g().span(); ++i)
        if (img_.have_e[i] && img_.occupied(i) && img_.key(i) >= k) return false;
      View mx;
      if (!max_key(a, word, &mx)) return false;
      return k > mx;
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
      const uint32_t vs = t_->opts_.value_size;
      if (v.size() > vs)
        throw LimitError("chime: value of " + std::to_string(v.size()) +
                         " bytes exceeds value_size " + std::to_string(vs));
    }
    bool write_op_locking(View k, std::string_view v, Op op) {
      if (op != Op::kRemove) check_value(v);
      std::vector<uint64_t> val(g().vw());
      if (op != Op::kRemove) btree::store_value(val.data(), v, g().value_size());
      // Indirect items: the new KV block is written in the lock's round trip (its own batch,
      // posted with the masked CAS), before the entry that points to it; the entry gets the
      // pointer. An insert of a present key or an update of an absent one leaves it unused.
      Batch block;
      if (t_->opts_.indirect && op != Op::kRemove)
        val[0] = kvblock::stage(*c_, block, v, block_buf_);
      uint32_t home = g().home(k);
      for (;;) {
        typename Core::Located loc = t_->core_.locate(*c_, k);
        GlobalAddress a = loc.leaf;
        unsigned hops = 0;  // sibling moves since this locate (kMaxHops)
        for (;;) {
          bool leaf_read = false;
          uint64_t word = lock_leaf(a, leaf_read, &block);
          if (!leaf_read) {
            img_.forget();
            fetch(a, op == Op::kInsert ? insert_segments(home, word) : neighborhood_segments(home),
                  true);
          }
          GlobalAddress sib = img_.sibling();
          if (g().fences() ? !in_fences(k) && (loc.from_cache || !beyond_high(k))
                           : loc.from_cache && sib != loc.next) {
            unlock(a, word);
            if (loc.from_cache) t_->core_.cache().invalidate(loc.parent);
            break;  // re-locate through fresh internal nodes
          }
          int i = find_in_neighborhood(k, home);
          if (g().fences() ? beyond_high(k)
                           : i < 0 && sib != loc.next && belongs_right(a, word, k)) {
            unlock(a, word);
            if (++hops > kMaxHops) break;  // not a recent split: a stale start; re-locate
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
      img_.set_entry(i, nv, 0, img_.hop(i), View{}, nullptr);
      uint32_t d = g().dist(home, i);
      img_.reseal(home, nv, img_.emeta(home).flags,
                  static_cast<uint16_t>(img_.hop(home) & ~(1u << d)));
      word = g().with_bucket(word, g().bucket(i), false);
      write_back_and_unlock(a, img_.entry_range(home, i, false), word);
    }

    // Hop range for an insert: from home's group replica to the end of the first bucket after
    // home that the piggybacked vacancy bitmap shows non-full, and at least the neighborhood
    // (to find an existing key). Wrapping ranges read the whole leaf.
    Segments insert_segments(uint32_t home, uint64_t word) {
      Segments segs;
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
    bool hop_insert(GlobalAddress a, View k, const uint64_t* val, uint32_t home, uint8_t nv,
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
            img_.set_entry(h, nv, 0, img_.hop(h), View{}, nullptr);
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
        View mx;
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
    // separator published upward is max(old) + 1, matching the argmax rule (byte keys: max(old)
    // + a 0x00 byte, the smallest key above it; internal nodes hold key_size + 1 bytes for it).
    void split(GlobalAddress a, uint8_t nv, uint64_t word) {
      const Geometry& geo = g();
      (void)word;
      if (!img_.whole()) fetch(a, {{0, geo.node_words()}});
      std::vector<std::pair<View, uint32_t>> live;
      for (uint32_t i = 0; i < geo.span(); ++i)
        if (img_.occupied(i) && !img_.tomb(i)) live.emplace_back(img_.key(i), i);
      if (live.size() < 2)
        throw LimitError("chime: leaf cannot split (neighborhood too small for its keys)");
      std::sort(live.begin(), live.end());
      size_t m = live.size() / 2;
      KeyT sep;
      if constexpr (K::kBytes) {
        sep.reserve(live[m - 1].first.size() + 1);
        sep.assign(live[m - 1].first);
        sep.push_back('\0');
      } else {
        sep = live[m - 1].first + 1;
      }
      uint8_t nnv = static_cast<uint8_t>(nv + 1);
      GlobalAddress na = t_->alloc_leaf(*c_);
      GlobalAddress old_sib = img_.sibling_of(0);
      KeyT low{}, high{};  // fences only: the leaf's [low, high) becomes [low, sep), [sep, high)
      if (geo.fences()) low = KeyT(img_.low_fence(0)), high = KeyT(img_.high_fence(0));

      Leaf right(geo, t_->keys_);
      right.write_hint = img_.write_hint;
      for (uint32_t i = 0; i < geo.span(); ++i) right.set_entry(i, nnv, 0, 0, View{}, nullptr);
      for (size_t x = m; x < live.size(); ++x) {
        uint32_t i = live[x].second;
        right.set_entry(i, nnv, Geometry::kOccupied, 0, img_.key(i), img_.value(i));
      }
      for (uint32_t i = 0; i < geo.span(); ++i)
        if (img_.occupied(i) && (img_.tomb(i) || img_.key(i) >= K::view(sep)))
          img_.set_entry(i, nnv, 0, 0, View{}, nullptr);
      right.rebuild_hops(nnv);
      img_.rebuild_hops(nnv);
      for (uint32_t r = 0; r < geo.groups(); ++r) {
        right.set_replica(r, nnv, old_sib);
        img_.set_replica(r, nnv, na);
        if (geo.fences()) {
          right.set_fences(r, K::view(sep), K::view(high));
          img_.set_fences(r, K::view(low), K::view(sep));
        }
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
      t_->core_.insert_separator(*c_, 1, K::view(sep), na, a);
    }

    std::shared_ptr<Tree> t_;
    Client<T>* c_;
    Leaf img_;
    // A parallel scan's leaves, images and batches (kept: no allocation per scan once warm).
    static constexpr size_t kMaxScanBatch = 32;
    std::vector<GlobalAddress> scan_plan_;
    std::vector<ScanInterval> scan_iv_;              // each planned leaf's cached interval
    std::vector<GlobalAddress> scan_next_;           // the leaf its cached node names after it
    std::vector<std::vector<Segment>> scan_segs_;    // what to read of it (none: whole)
    std::vector<std::vector<uint32_t>> scan_homes_;  // the homes whose bitmaps validate that
    std::vector<uint8_t> scan_cover_;
    std::vector<View> scan_keys_;
    std::vector<Leaf> scan_imgs_;
    std::vector<Batch> scan_batches_;
    std::vector<uint8_t> block_buf_;                 // indirect: a KV block read or written
    std::vector<std::vector<uint8_t>> scan_blocks_;  // indirect: a scan's rows' blocks
    GlobalAddress held_;                             // the leaf lock this handle holds, if any
    uint64_t held_word_ = 0;  // its lock word as found when taken (lock bit clear)
  };
};

// CHIME as the index contract offers it: integer keys (Options::key_size 8, the paper's and the
// default) or byte-string keys up to key_size bytes, chosen when the tree is built
// (dmrt/indexes/common/keyed_tree.h).
template <Transport T>
class Tree : public btree::KeyedTree<T, BasicTree, Tree<T>> {
 public:
  static constexpr const char* kName = "chime";
  Sync sync() const {
    return this->visit([](auto& t) { return t.sync(); });
  }

 private:
  friend btree::KeyedTree<T, BasicTree, Tree<T>>;
  Tree() = default;
};

// The name every index namespace offers (dmrt/runtime/index.h's Index concept).
template <Transport T>
using Index = Tree<T>;

}  // namespace dmrt::chime
