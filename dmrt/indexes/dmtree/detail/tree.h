// DMTree (FAST '26): FP-B+-tree on disaggregated memory with compute-side collaborative
// fingerprints and locks.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
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
#include "dmrt/indexes/common/striped.h"
#include "dmrt/indexes/dmtree/detail/leaf.h"
#include "dmrt/indexes/dmtree/detail/options.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/collab/service.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::dmtree {

// One Tree object per compute node: create() on the first, attach() on every other one. It holds
// the node's private internal-node cache, its handle on the collaborative service, and the
// read-delegation/write-combining slots. Clients use it through handle(client), and must be homed
// on that compute node. See README.md for the verbs each operation issues. K is the key policy
// (dmrt/indexes/common/btree_keys.h): IntKeys (key_size 8) or ByteKeys; Tree<T> below picks one.
template <Transport T, class K>
class BasicTree : public std::enable_shared_from_this<BasicTree<T, K>> {
 public:
  using Options = dmtree::Options;
  using Tree = BasicTree;
  using View = typename K::View;
  using KeyT = typename K::Key;
  using Table = dmtree::Table<K>;
  using LeafImage = dmtree::LeafImage<K>;
  using Core = btree::BTreeCore<T, K>;
  using Located = typename Core::Located;
  using NodePtr = typename Core::NodeCache::NodePtr;
  class Handle;
  static constexpr uint64_t kMagic = 0x45455254444d4431ull;  // "1DMDTREE"

  [[gnu::noinline]] static std::shared_ptr<Tree> create(Client<T>& c, const Options& o) {
    validate(o);
    Geometry g(o.leaf_span, o.value_size, o.key_size);
    NodeId mem0 = first_memory_node(c);
    uint64_t cap = o.max_leaves ? o.max_leaves : (c.region_bytes(mem0) / 2) / g.leaf_bytes();
    auto svc = collab::Service<T>::create(c, service_options(o, g, cap));
    GlobalAddress arena = c.alloc_on(mem0, svc->max_tables() * g.leaf_bytes(), 64);
    uint64_t meta[5] = {kMagic, arena.raw(), g.leaf_bytes(),
                        uint64_t{o.leaf_span} << 32 | o.value_size, format_bits(o)};
    GlobalAddress m = c.alloc_on(mem0, 64, 64);
    // Setup's WRITEs are written back and attach's READs invalidate, whatever the flush points:
    // a node attaching from another host must see them (sim times neither: see CoreFlushes).
    c.write(m, meta, sizeof(meta), FlushHint::kWriteBack);
    uint64_t mraw = m.raw();
    c.write(layout::root_slot(mem0, o.meta_slot), &mraw, 8, FlushHint::kWriteBack);
    auto t = std::shared_ptr<Tree>(new Tree(c, o, svc));
    t->load_meta(c);
    uint64_t id = svc->alloc_id(c);
    LeafImage leaf(t->geo_);
    leaf.set_header(1, View{}, View{}, true, 0);
    for (uint32_t i = 0; i < g.span(); ++i)
      make_entry(leaf.entry(i), g, t->keys_, 1, false, View{}, nullptr);
    c.write(t->leaf_addr(id), leaf.w.data(), g.leaf_words() * 8, FlushHint::kWriteBack);
    Table tb(t->geo_);
    svc->write_new(c, id, tb.data(), 1, collab::kUserFlag0);
    Core::publish_root(c, t->core_.root_slot(), {0, t->leaf_addr(id)});
    t->leaves_.fetch_add(1);
    return t;
  }

  // Another compute node joins: attaches to the service (membership epoch+1) with a fresh cache.
  [[gnu::noinline]] static std::shared_ptr<Tree> attach(Client<T>& c, const Options& o) {
    validate(o);
    Geometry g(o.leaf_span, o.value_size, o.key_size);
    GlobalAddress arena = read_meta(c, o, g);  // refused before joining the membership
    auto svc = collab::Service<T>::attach(c, service_options(o, g, 0));
    auto t = std::shared_ptr<Tree>(new Tree(c, o, svc));
    t->arena_ = arena;
    t->core_.read_root(c);
    return t;
  }

  Handle handle(Client<T>& c) { return Handle(this->shared_from_this(), c); }

  // This compute node departs (its clients must have stopped): ownership of its tables moves.
  void leave(Client<T>& c) { svc_->leave(c); }

  // The Index concept's form: this tree has no pool-wide figures to read, only its own.
  IndexStats stats(Client<T>&) { return stats(); }
  [[gnu::noinline]] IndexStats stats() {
    const auto& s = core_.stats();
    const auto& v = svc_->stats();
    return {{"height", static_cast<double>(core_.cached_height()) + 1},
            {"leaves", static_cast<double>(leaves_.load())},
            {"leaf_splits", static_cast<double>(splits_.load())},
            {"internal_splits", static_cast<double>(s.internal_splits.load())},
            {"cache_hits", static_cast<double>(s.cache_hits.load())},
            {"cache_misses", static_cast<double>(s.cache_misses.load())},
            {"cache_bytes", static_cast<double>(core_.cache().used_bytes())},
            {"fp_area_bytes", static_cast<double>(svc_->on_memory_node()
                                                      ? 0
                                                      : svc_->max_tables() * svc_->table_bytes())},
            {"local_copy_hits", static_cast<double>(local_hits_.load())},
            {"primary_reads", static_cast<double>(primary_reads_.load())},
            {"fp_false_positives", static_cast<double>(false_pos_.load())},
            {"inconsistencies", static_cast<double>(inconsistent_.load())},
            {"version_mismatches", static_cast<double>(version_mismatches_.load())},
            {"cache_invalidations", static_cast<double>(core_.cache().invalidations())},
            {"internal_reads", static_cast<double>(s.internal_reads.load())},
            {"leaf_merges", static_cast<double>(merges_.load())},
            {"merge_aborts", static_cast<double>(merge_aborts_.load())},
            {"unmerged_only_children", static_cast<double>(only_children_.load())},
            {"dead_leaf_hits", static_cast<double>(dead_hits_.load())},
            {"shared_results", static_cast<double>(comb_.shared() + wcomb_.shared())},
            {"takeovers", static_cast<double>(v.takeovers.load())},
            {"fences", static_cast<double>(v.fences.load())},
            {"recovered_locks", static_cast<double>(v.recovered_locks.load())},
            {"membership_refreshes", static_cast<double>(v.refreshes.load())},
            {"lock_retries", static_cast<double>(v.lock_retries.load())},
            {"read_retries", static_cast<double>(read_retries_.load() + s.retries.load())}};
  }
  uint64_t cache_bytes() const { return core_.cache().used_bytes(); }
  // The cached bottom-level node covering k, if any (tests look at its entries).
  NodePtr cache_node_for_test(View k) const { return core_.cache().find(k, 1); }
  const Options& options() const { return opts_; }
  const Geometry& geometry() const { return geo_; }
  collab::Service<T>& service() { return *svc_; }
  NodeId home() const { return svc_->home(); }

 private:
  BasicTree(Client<T>& c, const Options& o, std::shared_ptr<collab::Service<T>> svc)
      : opts_(o),
        geo_(o.leaf_span, o.value_size, o.key_size),
        keys_(keys_of<K>(geo_)),
        svc_(std::move(svc)),
        llt_(4096, 8),
        core_(layout::root_slot(first_memory_node(c), o.root_slot), o.internal_span, o.cache_bytes,
              &llt_, o.bottom_level_cache ? 1 : 0, o.entry_versions, keys_),
        comb_(o.combiner_slots, o.batch_limit),
        wcomb_(o.combiner_slots, o.batch_limit_writes ? o.batch_limit : rdwc::Combiner::kLimit) {
    core_.set_flushes(btree::core_flushes(o.faults.skip_flush));
  }

  static void validate(const Options& o) {
    if (o.value_size == 0 || o.value_size > 1024)
      throw ConfigError("dmtree: value_size must be in [1, 1024]");
    validate_option_fields("dmtree", o);  // each field's range (Options::fields())
    if (o.key_size == 0 || o.key_size > kMaxKeyBytes)
      throw ConfigError("dmtree: key_size must be in [1, " + std::to_string(kMaxKeyBytes) + "]");
    if (K::kBytes == (o.key_size == kIntegerKeyBytes))
      throw ConfigError("dmtree: key policy does not match key_size");  // Tree<T> picks it
    for (unsigned s : {o.root_slot, o.meta_slot})
      if (s >= layout::kRootSlots) throw ConfigError("dmtree: root slot out of range");
  }
  static NodeId first_memory_node(Client<T>& c) {
    auto m = c.memory_nodes();
    if (m.empty()) throw ConfigError("dmtree: the cluster has no memory node");
    return m.front();
  }
  static collab::Options service_options(const Options& o, const Geometry& g, uint64_t cap) {
    collab::Options so;
    so.payload_words = g.payload_words();
    so.max_tables = cap;
    so.on_memory_node = !o.collaborative;
    so.vnodes = o.vnodes;
    so.membership_slot = o.membership_slot;
    so.counter_slot = o.counter_slot;
    so.descriptor_slot = o.descriptor_slot;
    so.table_read_hint =
        flush_hint(o.faults.skip_flush, FlushPoint::kTableInvalidate, FlushHint::kInvalidate);
    so.table_write_hint =
        flush_hint(o.faults.skip_flush, FlushPoint::kTableWriteBack, FlushHint::kWriteBack);
    so.membership_read_hint =
        flush_hint(o.faults.skip_flush, FlushPoint::kMembershipInvalidate, FlushHint::kInvalidate);
    return so;
  }
  // Settings every compute node must share: the bottom level's layout, whether leaves merge
  // (a node that does not expect merges would trust a stale copy's fences), and byte keys' size.
  static uint64_t format_bits(const Options& o) {
    return (o.entry_versions ? 1u : 0u) | (o.leaf_merge ? 2u : 0u) |
           (o.key_size == kIntegerKeyBytes ? 0u : uint64_t{o.key_size} << 8);
  }
  // The leaf arena of the tree in memory, after checking that it was built with these options.
  static GlobalAddress read_meta(Client<T>& c, const Options& o, const Geometry& g) {
    uint64_t mraw = c.template read_value<uint64_t>(
        layout::root_slot(first_memory_node(c), o.meta_slot), FlushHint::kInvalidate);
    if (mraw == 0) throw ConfigError("dmtree: no tree at meta slot (create it first)");
    uint64_t meta[5];
    c.read(GlobalAddress::from_raw(mraw), meta, sizeof(meta), FlushHint::kInvalidate);
    if (meta[0] != kMagic || meta[2] != g.leaf_bytes() ||
        meta[3] != (uint64_t{o.leaf_span} << 32 | o.value_size))
      throw ConfigError("dmtree: the tree in memory has another geometry (leaf_span/value_size)");
    if (meta[4] != format_bits(o))
      throw ConfigError(
          "dmtree: the tree in memory was created with other entry_versions/leaf_merge/key_size "
          "settings "
          "(every compute node must use the creator's)");
    return GlobalAddress::from_raw(meta[1]);
  }
  void load_meta(Client<T>& c) { arena_ = read_meta(c, opts_, geo_); }

  GlobalAddress leaf_addr(uint64_t id) const { return arena_ + id * geo_.leaf_bytes(); }
  // The hint flush point `p` issues (none when a test switched the point off).
  FlushHint hint(FlushPoint p, FlushHint h) const {
    return flush_hint(opts_.faults.skip_flush, p, h);
  }
  FlushHint leaf_read_hint() const {
    return hint(FlushPoint::kLeafInvalidate, FlushHint::kInvalidate);
  }
  FlushHint leaf_write_hint() const {
    return hint(FlushPoint::kLeafWriteBack, FlushHint::kWriteBack);
  }
  uint64_t leaf_id(GlobalAddress a) const {
    if (a.node() != arena_.node() || a.offset() < arena_.offset())
      throw Error("dmtree: leaf pointer " + a.to_string() + " outside the leaf arena");
    return (a.offset() - arena_.offset()) / geo_.leaf_bytes();
  }

  // Whole-leaf READ, repeated until every object is sealed with one version.
  void read_leaf(Client<T>& c, uint64_t id, LeafImage& leaf) {
    for (;;) {
      c.read(leaf_addr(id), leaf.w.data(), geo_.leaf_words() * 8, leaf_read_hint());
      if (leaf.consistent()) return;
      read_retries_.fetch_add(1, std::memory_order_relaxed);
      c.pause();
    }
  }
  // The service's rebuild callback: a table recomputed from its leaf on the memory node.
  void rebuild(Client<T>& c, uint64_t id, uint64_t* payload, uint32_t& version, uint8_t& flags) {
    LeafImage leaf(geo_);
    read_leaf(c, id, leaf);
    const uint32_t kw = geo_.kw();
    keys_.put(payload, leaf.lo());
    keys_.put(payload + kw, leaf.hi());
    payload[2 * kw] = leaf.sibling();
    auto* fps = reinterpret_cast<uint8_t*>(payload + 2 * kw + 1);
    std::fill(fps, fps + geo_.fp_words() * 8, uint8_t{0});
    for (uint32_t i = 0; i < geo_.span(); ++i)
      if (entry_occupied(leaf.entry(i))) fps[i] = fingerprint(leaf.key(leaf.entry(i)));
    version = leaf.version();
    flags = static_cast<uint8_t>((leaf.hi_inf() ? collab::kUserFlag0 : 0) |
                                 (leaf.dead() ? kDeadFlag : 0));
  }

  Options opts_;
  Geometry geo_;
  K keys_;
  std::shared_ptr<collab::Service<T>> svc_;
  btree::LocalLockTable llt_;
  btree::LocalLockTable key_locks_{4096, 0};  // per-key write tickets (local_key_lock)
  Core core_;
  rdwc::Combiner comb_;   // read delegation (rounds of at most batch_limit followers)
  rdwc::Combiner wcomb_;  // write combining (unbounded unless batch_limit_writes)
  GlobalAddress arena_;
  std::atomic<uint64_t> leaves_{0}, splits_{0}, merges_{0}, merge_aborts_{0}, only_children_{0};
  // What searches count, striped: one shared word would bounce between the threads' caches.
  btree::StripedCounter read_retries_, local_hits_, primary_reads_, false_pos_, inconsistent_,
      version_mismatches_, dead_hits_;

 public:
  // One client's view. Not shared between fibers.
  class Handle {
   public:
    Handle(std::shared_ptr<Tree> t, Client<T>& c)
        : t_(std::move(t)),
          c_(&c),
          g_(&t_->geo_),
          tb_(*g_),
          ebuf_(size_t{g_->span()} * g_->ew()),
          rebuild_([tp = t_.get()](Client<T>& cl, uint64_t id, uint64_t* p, uint32_t& v,
                                   uint8_t& f) { tp->rebuild(cl, id, p, v, f); }) {
      if (c.home_node() != t_->home())
        throw ConfigError("dmtree: a client homed on node " + std::to_string(c.home_node()) +
                          " needs the Tree of that compute node (attach one there), not node " +
                          std::to_string(t_->home()) + "'s");
    }

    [[gnu::noinline]] bool search(View k, std::string& out) {
      check_live();
      if (t_->opts_.read_delegation)
        return t_->comb_.run(*c_, k, false, {}, &out, [&](std::string_view, std::string* o) {
          return search_direct(k, *o);
        });
      return search_direct(k, out);
    }
    bool insert(View k, std::string_view v) { return write_op(k, v, Op::kInsert); }
    [[gnu::noinline]] bool update(View k, std::string_view v) {
      check_live();
      if (t_->opts_.write_combining) {
        check_value(v);
        return t_->wcomb_.run(*c_, k, true, v, nullptr, [&](std::string_view wv, std::string*) {
          return write_op(k, wv, Op::kUpdate);
        });
      }
      return write_op(k, v, Op::kUpdate);
    }
    bool remove(View k) { return write_op(k, {}, Op::kRemove); }

    // With byte keys, `from` may be empty (every key is >= it).
    [[gnu::noinline]] void scan(View from, size_t count,
                                std::vector<std::pair<KeyT, std::string>>& rows) {
      rows.clear();
      check_live();
      if (count == 0) return;
      const Geometry& g = *g_;
      std::vector<std::pair<View, uint32_t>> ks;
      std::vector<uint64_t> buf(g.leaf_words());
      bool any = false;  // rows hold keys up to `last`; a restart continues after it
      KeyT last{};
      [[maybe_unused]] KeyT from_key{};  // where a restart of a byte-key scan starts
      for (;;) {
        Located loc = locate(from);
        Target tg = target(loc);
        uint64_t id = tg.id;
        bool first = true, restart = false, refresh = false;
        while (rows.size() < count) {
          // Unlocked, as a search's negative answer: a key the scan does not return is one it
          // says was absent, and an insert holding the lock has written its entry, which a
          // search through a cached copy may already have returned, but not yet its fingerprint.
          primary(id, true);
          if (tb_.dead()) {  // merged away: the entry or sibling that led here is stale
            t_->dead_hits_.fetch_add(1, std::memory_order_relaxed);
            if (first && loc.from_cache) t_->core_.cache().invalidate(loc.parent);
            restart = true;
            break;
          }
          if (first && stale_entry(tg)) {
            refresh = restart = true;
            break;
          }
          if (first && from < tb_.lo()) {
            if (loc.from_cache) t_->core_.cache().invalidate(loc.parent);
            restart = true;
            break;
          }
          if (first && !tb_.covers_hi(from)) {
            if (!tb_.sibling()) break;
            id = tb_.sibling() - 1;
            tg.check = false;
            continue;
          }
          uint32_t lo_i = g.span(), hi_i = 0;
          for (uint32_t i = 0; i < g.span(); ++i)
            if (tb_.fp(i)) {
              lo_i = std::min(lo_i, i);
              hi_i = i;
            }
          bool retry = false;
          ks.clear();
          if (lo_i <= hi_i) {
            const uint64_t* base;
            if (t_->opts_.scan_filter) {  // only the slot range fingerprints mark used
              c_->read(t_->leaf_addr(id) + g.entry_offset(lo_i), buf.data(),
                       (hi_i - lo_i + 1) * g.ew() * 8, t_->leaf_read_hint());
              base = buf.data() - size_t{lo_i} * g.ew();
            } else {
              c_->read(t_->leaf_addr(id), buf.data(), g.leaf_words() * 8, t_->leaf_read_hint());
              base = buf.data() + g.hw();
            }
            for (uint32_t i = lo_i; i <= hi_i && !retry; ++i) {
              if (!tb_.fp(i)) continue;
              const uint64_t* e = base + size_t{i} * g.ew();
              if (!entry_sealed(e, g) || version_of(e) != tb_.version()) {
                retry = true;
                break;
              }
              if (!entry_occupied(e)) continue;  // a delete in flight
              const View ek = key_at(e);
              if (fingerprint(ek) != tb_.fp(i)) {
                retry = true;
                break;
              }
              if (ek >= from && (!any || ek > last)) ks.emplace_back(ek, i);
            }
            if (retry) {
              t_->read_retries_.fetch_add(1, std::memory_order_relaxed);
              c_->pause();
              continue;  // same leaf again
            }
            std::sort(ks.begin(), ks.end());
            for (auto& [k, i] : ks) {
              if (rows.size() == count) break;
              std::string v;
              btree::load_value(base + size_t{i} * g.ew() + g.vo(), g.value_size(), v);
              rows.emplace_back(KeyT(k), std::move(v));
              last = k;
              any = true;
            }
          }
          first = false;
          if (tb_.hi_inf() || !tb_.sibling()) break;
          id = tb_.sibling() - 1;
        }
        if (!restart) return;
        if (any) {
          if constexpr (K::kBytes) {
            from_key = last;  // rows skip `last` and what precedes it (`any`)
            from = from_key;
          } else {
            if (last == ~Key{0}) return;
            from = std::max(from, last + 1);
          }
        }
        if (!refresh) c_->pause();
      }
    }

    Client<T>& client() { return *c_; }
    // Per-handle figures for tests: fingerprint matches whose entry held another key.
    uint64_t fp_collisions() const { return collisions_; }
    uint64_t splits() const { return my_splits_; }
    uint64_t merges() const { return my_merges_; }

    // Test-only: takes the leaf lock of k's leaf and never releases it (a client that dies while
    // holding a lock). Peers recover it once this compute node has left.
    void abandon_lock_for_test(View k) {
      Located loc = t_->core_.locate(*c_, k);
      uint64_t id = t_->leaf_id(loc.leaf);
      t_->svc_->lock_primary(*c_, id, tb_.data(), rebuild_);
    }

   private:
    enum class Op { kInsert, kUpdate, kRemove };
    View key_at(const uint64_t* e) const { return t_->keys_.get(e + 1); }
    using Rebuild = std::function<void(Client<T>&, uint64_t, uint64_t*, uint32_t&, uint8_t&)>;

    void check_live() const {
      if (t_->svc_->left()) throw Error("dmtree: this compute node has left the cluster");
    }
    void check_value(std::string_view v) const {
      if (v.size() > g_->value_size())
        throw LimitError("dmtree: value of " + std::to_string(v.size()) +
                         " bytes exceeds value_size " + std::to_string(g_->value_size()));
    }

    NodeId primary(uint64_t id, bool wait_unlocked) {
      t_->primary_reads_.fetch_add(1, std::memory_order_relaxed);
      return t_->svc_->read_primary(*c_, id, tb_.data(), wait_unlocked, rebuild_);
    }
    // Table of `id` for a search: this node's cached copy when it has one, else the primary
    // (then cached). Returns true when tb_ holds the primary.
    bool load_for_search(uint64_t id) {
      auto& svc = *t_->svc_;
      if (t_->opts_.cached_copies && svc.caches(id)) {
        if (svc.read_local(*c_, id, tb_.data())) {
          t_->local_hits_.fetch_add(1, std::memory_order_relaxed);
          return false;
        }
        primary(id, false);
        std::vector<uint64_t> copy = tb_.w;
        svc.store_local(*c_, id, copy.data());
        return true;
      }
      primary(id, false);
      return true;
    }
    void refresh_copy(uint64_t id) {
      if (!t_->opts_.cached_copies || !t_->svc_->caches(id)) return;
      std::vector<uint64_t> copy = tb_.w;
      t_->svc_->store_local(*c_, id, copy.data());
    }

    // Reads the entries whose fingerprint matches f (one batch to the memory node) and looks
    // for k. 1: found (out filled); 0: not there per this table; -1: table and leaf disagree
    // (torn entry or other version). `slot` receives the slot found.
    int match(uint64_t id, View k, uint8_t f, std::string* out, int* slot = nullptr) {
      const Geometry& g = *g_;
      uint32_t cand[64];
      const uint32_t n = tb_.slots_with_fp(g.span(), f, cand);
      for (uint32_t b0 = 0; b0 < n; b0 += 32) {
        Batch b;
        uint32_t e = std::min(n, b0 + 32);
        for (uint32_t j = b0; j < e; ++j)
          b.read(t_->leaf_addr(id) + g.entry_offset(cand[j]), &ebuf_[size_t{j} * g.ew()],
                 g.ew() * 8)
              .hint(t_->leaf_read_hint());
        c_->run(b);
      }
      int found = -1;
      for (uint32_t j = 0; j < n; ++j) {
        const uint64_t* e = &ebuf_[size_t{j} * g.ew()];
        if (!entry_sealed(e, g) || version_of(e) != tb_.version()) return -1;
        if (found < 0 && entry_occupied(e) && key_at(e) == k) found = static_cast<int>(j);
      }
      uint32_t misses = n - (found >= 0 ? 1 : 0);  // entries read for nothing
      collisions_ += misses;
      if (misses) t_->false_pos_.fetch_add(misses, std::memory_order_relaxed);
      if (found < 0) return 0;
      const uint64_t* e = &ebuf_[size_t(found) * g.ew()];
      if (out) btree::load_value(e + g.vo(), g.value_size(), *out);
      if (slot) *slot = static_cast<int>(cand[found]);
      return 1;
    }

    // Where a traversal says k's leaf is: its table id and, with entry_versions, the version ID
    // its bottom-level entry holds (§3.2.2), to compare with the version of the table read.
    struct Target {
      uint64_t id;
      bool check;  // a version to compare: the entry was tagged and no B-link move happened since
      uint32_t version;
      bool from_cache;
      NodePtr parent;
    };
    Target target(const Located& loc) const {
      if (loc.tagged)
        return {tag_table(loc.tag), true, tag_version(loc.tag), loc.from_cache, loc.parent};
      return {t_->leaf_id(loc.leaf), false, 0, loc.from_cache, loc.parent};
    }
    // The version check against tb_, a primary image. True when a cached entry is stale: the
    // caller locates again, which reads that bottom-level node anew and caches it (the cache
    // refresh; the upper levels are not read again). A mismatch against a node read just now (a
    // split or merge that has not reached the parent yet) is left to the fences.
    bool stale_entry(Target& tg) {
      if (!tg.check || tb_.version() == tg.version) return false;
      tg.check = false;
      if (!tg.from_cache) return false;
      t_->version_mismatches_.fetch_add(1, std::memory_order_relaxed);
      reread_ = tg.parent->addr;
      return true;
    }
    // Where k's leaf is: through the cache, or, after stale_entry, by reading the stale node anew.
    Located locate(View k) {
      if (reread_.is_null()) return t_->core_.locate(*c_, k);
      GlobalAddress a = reread_;
      reread_ = GlobalAddress::null();
      return t_->core_.reread_level1(*c_, k, a);
    }
    // A B-link move to the right sibling: no entry vouches for it.
    void moved_right(Target& tg) {
      if (tg.from_cache) t_->core_.cache().invalidate(tg.parent);
      tg.from_cache = tg.check = false;
    }

    bool search_direct(View k, std::string& out) {
      const uint8_t f = fingerprint(k);
      for (;;) {
        Located loc = locate(k);
        Target tg = target(loc);
        uint64_t id = tg.id;
        bool is_primary = load_for_search(id), refresh = false;
        for (;;) {
          if (tb_.dead()) {  // merged away (final, so a copy saying it is enough)
            t_->dead_hits_.fetch_add(1, std::memory_order_relaxed);
            break;
          }
          if (tg.check && tb_.version() != tg.version) {
            if (!is_primary) {  // the copy may be the stale one: ask the primary first
              primary(id, false);
              refresh_copy(id);
              is_primary = true;
              continue;
            }
            if (stale_entry(tg)) {
              refresh = true;
              break;
            }
          }
          if (k < tb_.lo()) {
            if (!is_primary) {
              primary(id, false);
              is_primary = true;
              continue;
            }
            break;  // the cached parent is stale: traverse again
          }
          if (!tb_.covers_hi(k)) {
            // Splits only shrink ranges, so a stale copy may send us right; a merge grows one, so
            // with merges the primary decides.
            if (!is_primary && t_->opts_.leaf_merge) {
              primary(id, false);
              refresh_copy(id);
              is_primary = true;
              continue;
            }
            moved_right(tg);
            if (!tb_.sibling()) {
              primary(id, false);
              is_primary = true;
              continue;
            }
            id = tb_.sibling() - 1;
            is_primary = load_for_search(id);
            continue;
          }
          int r = match(id, k, f, &out);
          if (r == 1) return true;
          if (r < 0) t_->inconsistent_.fetch_add(1, std::memory_order_relaxed);
          if (!is_primary) {
            // Inconsistency (i) or (ii) against a cached copy: ask the primary, refresh the copy.
            if (r == 0 && injected(t_->opts_.faults.skip_negative_confirm)) return false;
            primary(id, r == 0);
            refresh_copy(id);
            is_primary = true;
            continue;
          }
          if (r < 0) {  // a writer is between its leaf write and its table write
            c_->pause();
            primary(id, false);
            continue;
          }
          if (collab::lock_held(tb_.lock_word())) {  // negative answers come from unlocked tables
            primary(id, true);
            continue;
          }
          return false;
        }
        if (refresh) continue;  // stale_entry: the next locate reads the node anew
        if (tg.from_cache) t_->core_.cache().invalidate(tg.parent);
        c_->pause();
      }
    }

    [[gnu::noinline]] bool write_op(View k, std::string_view v, Op op) {
      // The local ticket of the key (no remote lock is handed over through it: release(false)).
      GlobalAddress ticket;
      if constexpr (K::kBytes)
        ticket = GlobalAddress::from_raw(hash_bytes(k));
      else
        ticket = GlobalAddress::from_raw(k);
      const bool local = t_->opts_.local_key_lock;
      if (local) t_->key_locks_.acquire(*c_, ticket);
      try {
        bool ok = write_op_locking(k, v, op);
        if (local) t_->key_locks_.release(ticket, false);
        return ok;
      } catch (...) {
        release_after_error();
        if (local) t_->key_locks_.release(ticket, false);
        throw;
      }
    }
    // On an error path (pool or table ids exhausted, transport failure) under the leaf lock:
    // release it, so that the other clients see the error instead of waiting for it forever
    // (or, across compute nodes, until the liveness check declares this live node dead: never).
    void release_after_error() noexcept {
      if (!held_) return;
      held_ = false;
      try {
        t_->svc_->unlock(*c_, held_owner_, held_id_);
      } catch (...) {  // the transport failed: the original error is the one to report
      }
    }
    bool write_op_locking(View k, std::string_view v, Op op) {
      const Geometry& g = *g_;
      check_live();
      if (op != Op::kRemove) check_value(v);
      std::vector<uint64_t> val(g.vw());
      if (op != Op::kRemove) btree::store_value(val.data(), v, g.value_size());
      auto& svc = *t_->svc_;
      for (;;) {
        Located loc = locate(k);
        Target tg = target(loc);
        uint64_t id = tg.id;
        bool refresh = false;
        for (;;) {
          NodeId o = svc.lock_primary(*c_, id, tb_.data(), rebuild_);
          held_ = true;
          held_owner_ = o;
          held_id_ = id;
          if (tb_.dead()) {  // merged away
            t_->dead_hits_.fetch_add(1, std::memory_order_relaxed);
            held_ = false;
            svc.unlock(*c_, o, id);
            break;
          }
          if (stale_entry(tg)) {  // unlock, refresh the cached node, lock again
            held_ = false;
            svc.unlock(*c_, o, id);
            refresh = true;
            break;
          }
          if (k < tb_.lo()) {
            held_ = false;
            svc.unlock(*c_, o, id);
            break;
          }
          if (!tb_.covers_hi(k)) {
            held_ = false;
            svc.unlock(*c_, o, id);
            moved_right(tg);
            id = tb_.sibling() - 1;
            continue;
          }
          merge_id_ = kNoMerge;
          bool ok = apply(o, id, k, val.data(), op);
          if (merge_id_ != kNoMerge) try_merge(merge_id_, merge_lo_);
          return ok;
        }
        if (refresh) continue;
        if (tg.from_cache) t_->core_.cache().invalidate(tg.parent);
        c_->pause();
      }
    }

    // Under the leaf lock, with tb_ the primary table.
    bool apply(NodeId o, uint64_t id, View k, const uint64_t* val, Op op) {
      const Geometry& g = *g_;
      auto& svc = *t_->svc_;
      const uint8_t f = fingerprint(k);
      int slot = -1;
      int r;
      while ((r = match(id, k, f, nullptr, &slot)) < 0)
        c_->pause();  // cannot persist under the lock
      uint32_t ver = tb_.version();
      std::vector<uint64_t> e(g.ew());
      if (r == 1) {
        if (op == Op::kInsert) {
          held_ = false;
          svc.unlock(*c_, o, id);
          return false;
        }
        make_entry(e.data(), g, t_->keys_, ver, op == Op::kUpdate, k, val);
        c_->write(t_->leaf_addr(id) + g.entry_offset(slot), e.data(), g.ew() * 8,
                  t_->leaf_write_hint());
        if (op == Op::kUpdate) {
          held_ = false;
          svc.unlock(*c_, o, id);  // fingerprints unchanged: a separate 8-byte unlock
        } else {
          tb_.set_fp(slot, 0);
          held_ = false;
          svc.write_unlock(*c_, o, id, tb_.data(), ver, tb_.user_flags());
          if (t_->opts_.leaf_merge && tb_.used(g.span()) == 0) {  // emptied: merge it (§4.2)
            merge_id_ = id;
            merge_lo_ = KeyT(tb_.lo());
          }
        }
        return true;
      }
      if (op != Op::kInsert) {
        held_ = false;
        svc.unlock(*c_, o, id);
        return false;
      }
      if (injected(t_->opts_.faults.ack_without_write)) {
        held_ = false;
        svc.unlock(*c_, o, id);
        return true;
      }
      for (uint32_t i = 0; i < g.span(); ++i) {
        if (tb_.fp(i)) continue;
        make_entry(e.data(), g, t_->keys_, ver, true, k, val);
        c_->write(t_->leaf_addr(id) + g.entry_offset(i), e.data(), g.ew() * 8,
                  t_->leaf_write_hint());
        tb_.set_fp(i, f);
        held_ = false;
        svc.write_unlock(*c_, o, id, tb_.data(), ver, tb_.user_flags());  // embedded unlock
        return true;
      }
      split_insert(o, id, k, val);
      return true;
    }

    // Leaf full: the upper half moves to a new leaf (and a new table) written before anything
    // points to them; then the old leaf and its table (unlock embedded); then the separator.
    void split_insert(NodeId o, uint64_t id, View k, const uint64_t* val) {
      const Geometry& g = *g_;
      auto& svc = *t_->svc_;
      LeafImage old(g);
      t_->read_leaf(*c_, id, old);
      struct Item {
        View k;
        const uint64_t* v;
      };
      std::vector<Item> items;
      for (uint32_t i = 0; i < g.span(); ++i)
        if (entry_occupied(old.entry(i)))
          items.push_back({old.key(old.entry(i)), old.entry(i) + g.vo()});
      items.push_back({k, val});
      std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.k < b.k; });
      size_t m = items.size() / 2;
      View sep = items[m].k;
      uint32_t nv = (old.version() + 1) & 0xffffff;
      uint64_t rid = svc.alloc_id(*c_);

      LeafImage left(g), right(g);
      Table lt(g), rt(g);
      right.set_header(nv, sep, old.hi(), old.hi_inf(), old.sibling());
      left.set_header(nv, old.lo(), sep, false, rid + 1);
      for (uint32_t i = 0; i < g.span(); ++i) {
        size_t li = i, ri = m + i;
        bool lo = li < m, ro = ri < items.size();
        make_entry(left.entry(i), g, t_->keys_, nv, lo, lo ? items[li].k : View{},
                   lo ? items[li].v : nullptr);
        make_entry(right.entry(i), g, t_->keys_, nv, ro, ro ? items[ri].k : View{},
                   ro ? items[ri].v : nullptr);
        if (lo) lt.set_fp(i, fingerprint(items[li].k));
        if (ro) rt.set_fp(i, fingerprint(items[ri].k));
      }
      lt.set_fences(old.lo(), sep, rid + 1);
      rt.set_fences(sep, old.hi(), old.sibling());
      c_->write(t_->leaf_addr(rid), right.w.data(), g.leaf_words() * 8, t_->leaf_write_hint());
      svc.write_new(*c_, rid, rt.data(), nv, old.hi_inf() ? collab::kUserFlag0 : 0);
      c_->write(t_->leaf_addr(id), left.w.data(), g.leaf_words() * 8, t_->leaf_write_hint());
      held_ = false;
      svc.write_unlock(*c_, o, id, lt.data(), nv, 0);
      t_->splits_.fetch_add(1, std::memory_order_relaxed);
      t_->leaves_.fetch_add(1, std::memory_order_relaxed);
      ++my_splits_;
      // The new entry names the new leaf's table and version; the old leaf's entry takes its new
      // version (entry_versions; untagged nodes ignore both).
      t_->core_.insert_separator(*c_, 1, sep, t_->leaf_addr(rid), t_->leaf_addr(id),
                                 entry_tag(rid, nv), entry_tag(id, nv));
    }

    // §4.2: a leaf whose last entry was deleted is merged with its neighbour under the same
    // parent. Of the two adjacent leaves (the emptied one and its left neighbour, or its right one
    // when it is the parent's leftmost child), the right one moves into the left one, which takes
    // the union's range and version+1; the right one is marked dead (leaf and table, version+1,
    // final) and its entry leaves the parent, whose entry for the left one takes the new version.
    // Locks: the parent (memory node, edit_level1), then the two leaves left to right; nobody
    // holds a leaf lock while waiting for an internal one (splits release theirs first), so this
    // cannot deadlock. Readers and writers that reach the dead leaf through a stale entry or a
    // sibling pointer see the flag and traverse again; stale cached entries of the survivor fail
    // the version check (or, without entry versions, its fences send them on).
    void try_merge(uint64_t id, View lo) {
      for (unsigned attempt = 0; attempt < kMergeAttempts; ++attempt) {
        MergeStep r = MergeStep::kSkip;  // stays when the root is a leaf
        t_->core_.edit_level1(*c_, lo, [&](typename Core::InternalNode& p) {
          r = merge_under(p, id);
          return r == MergeStep::kMerged;
        });
        if (r == MergeStep::kMerged) {
          t_->merges_.fetch_add(1, std::memory_order_relaxed);
          t_->leaves_.fetch_sub(1, std::memory_order_relaxed);
          ++my_merges_;
          return;
        }
        if (r == MergeStep::kSkip) return;
        if (r == MergeStep::kOnlyChild) {
          t_->only_children_.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        c_->pause();  // kRetry: a neighbour's split has not reached the parent yet
      }
      t_->merge_aborts_.fetch_add(1, std::memory_order_relaxed);
    }

    // kSkip: nothing to do (refilled, merged already, no parent); kOnlyChild: no neighbour under
    // the parent (internal nodes are never merged), the leaf stays.
    enum class MergeStep { kMerged, kRetry, kSkip, kOnlyChild };
    // Under the parent's lock: merge the pair around leaf `id` and edit the parent.
    MergeStep merge_under(typename Core::InternalNode& p, uint64_t id) {
      const Geometry& g = *g_;
      auto& svc = *t_->svc_;
      size_t pos = p.position_of(t_->leaf_addr(id));
      if (pos > p.count()) return MergeStep::kRetry;  // its separator is not in yet
      size_t lp;
      if (pos >= 1)
        lp = pos - 1;
      else if (p.count() >= 1)
        lp = 0;
      else
        return MergeStep::kOnlyChild;
      const uint64_t lid = t_->leaf_id(p.child_at(lp)), rid = t_->leaf_id(p.child_at(lp + 1));
      Table lt(g), rt(g);
      NodeId lo_owner = svc.lock_primary(*c_, lid, lt.data(), rebuild_);
      NodeId ro_owner = 0;
      bool l_held = true, r_held = false;
      try {
        ro_owner = svc.lock_primary(*c_, rid, rt.data(), rebuild_);
        r_held = true;
        const Table& emptied = rid == id ? rt : lt;
        MergeStep verdict = MergeStep::kMerged;
        if (emptied.dead() || emptied.used(g.span()) != 0)
          verdict = MergeStep::kSkip;  // merged already, or refilled since
        else if (lt.dead() || rt.dead() || lt.sibling() != rid + 1 || lt.hi_inf() ||
                 lt.hi() != rt.lo() || lt.used(g.span()) + rt.used(g.span()) > g.span())
          verdict = MergeStep::kRetry;  // the pair is not adjacent (yet): a split in flight
        if (verdict != MergeStep::kMerged) {
          r_held = false;
          svc.unlock(*c_, ro_owner, rid);
          l_held = false;
          svc.unlock(*c_, lo_owner, lid);
          return verdict;
        }
        LeafImage left(g), right(g), merged(g), dead(g);
        t_->read_leaf(*c_, lid, left);
        t_->read_leaf(*c_, rid, right);
        const uint32_t nv = next_version(left.version()), dv = next_version(right.version());
        Table mt(g), dt(g);
        merged.set_header(nv, left.lo(), right.hi(), right.hi_inf(), right.sibling());
        mt.set_fences(left.lo(), right.hi(), right.sibling());
        for (uint32_t i = 0; i < g.span(); ++i) {
          const uint64_t* e = left.entry(i);
          bool occ = entry_occupied(e);
          make_entry(merged.entry(i), g, t_->keys_, nv, occ, left.key(e), e + g.vo());
          if (occ) mt.set_fp(i, fingerprint(left.key(e)));
        }
        uint32_t free_i = 0;
        for (uint32_t i = 0; i < g.span(); ++i) {
          const uint64_t* e = right.entry(i);
          if (!entry_occupied(e)) continue;
          uint32_t j = mt.fp(i) ? free_i : i;
          while (mt.fp(j)) j = ++free_i;
          make_entry(merged.entry(j), g, t_->keys_, nv, true, right.key(e), e + g.vo());
          mt.set_fp(j, fingerprint(right.key(e)));
        }
        dead.set_header(dv, right.lo(), right.hi(), right.hi_inf(), right.sibling(), true);
        for (uint32_t i = 0; i < g.span(); ++i)
          make_entry(dead.entry(i), g, t_->keys_, dv, false, View{}, nullptr);
        dt.set_fences(right.lo(), right.hi(), right.sibling());
        // Survivor's leaf, then the dead leaf and its table (unlocking it), then the survivor's
        // table (unlocking it): no writer can change the survivor's copy of a moved entry while
        // the dead leaf still serves it.
        c_->write(t_->leaf_addr(lid), merged.w.data(), g.leaf_words() * 8, t_->leaf_write_hint());
        c_->write(t_->leaf_addr(rid), dead.w.data(), g.leaf_words() * 8, t_->leaf_write_hint());
        const uint8_t inf = right.hi_inf() ? collab::kUserFlag0 : 0;
        r_held = false;
        svc.write_unlock(*c_, ro_owner, rid, dt.data(), dv, static_cast<uint8_t>(inf | kDeadFlag));
        l_held = false;
        svc.write_unlock(*c_, lo_owner, lid, mt.data(), nv, inf);
        p.erase_entry(lp);  // the right one's entry: keys[lp], children[lp]
        if (p.tagged) p.set_child_tag(lp, entry_tag(lid, nv));
        return MergeStep::kMerged;
      } catch (...) {
        try {
          if (r_held) svc.unlock(*c_, ro_owner, rid);
          if (l_held) svc.unlock(*c_, lo_owner, lid);
        } catch (...) {  // the transport failed: the original error is the one to report
        }
        throw;
      }
    }

    std::shared_ptr<Tree> t_;
    Client<T>* c_;
    const Geometry* g_;
    Table tb_;
    std::vector<uint64_t> ebuf_;
    Rebuild rebuild_;
    static constexpr unsigned kMergeAttempts = 16;
    static constexpr uint64_t kNoMerge = ~uint64_t{0};
    uint64_t collisions_ = 0, my_splits_ = 0, my_merges_ = 0;
    uint64_t merge_id_ = kNoMerge;
    GlobalAddress reread_ = GlobalAddress::null();  // a stale cached node to read anew  // a delete
                                                    // emptied this leaf: merge it after the unlock
    KeyT merge_lo_{};
    bool held_ = false;  // this handle holds the lock of table held_id_ on held_owner_
    NodeId held_owner_ = 0;
    uint64_t held_id_ = 0;
  };
};

// DMTree as the index contract offers it: integer keys (Options::key_size 8, the default) or
// byte-string keys up to key_size bytes (the paper's evaluation uses 24 B keys), chosen when the
// tree is built (dmrt/indexes/common/keyed_tree.h); one per compute node as BasicTree.
template <Transport T>
class Tree : public btree::KeyedTree<T, BasicTree, Tree<T>> {
  using Base = btree::KeyedTree<T, BasicTree, Tree<T>>;

 public:
  static constexpr const char* kName = "dmtree";
  using IntTree = typename Base::IntTree;

  class Handle : public Base::Handle {
   public:
    uint64_t fp_collisions() const {
      return this->visit([](auto& h) { return h.fp_collisions(); });
    }
    uint64_t splits() const {
      return this->visit([](auto& h) { return h.splits(); });
    }
    uint64_t merges() const {
      return this->visit([](auto& h) { return h.merges(); });
    }
    void abandon_lock_for_test(Key k) {
      if (auto* h = this->ints()) return h->abandon_lock_for_test(k);
      this->bytes()->abandon_lock_for_test(key_bytes(k));
    }
  };

  void leave(Client<T>& c) {
    this->visit([&](auto& t) { t.leave(c); });
  }
  // The cached bottom-level node covering k, if any (integer trees; tests look at its entries).
  typename IntTree::NodePtr cache_node_for_test(Key k) const {
    auto* t = this->ints();
    return t ? t->cache_node_for_test(k) : nullptr;
  }
  collab::Service<T>& service() {
    return this->visit([](auto& t) -> collab::Service<T>& { return t.service(); });
  }
  NodeId home() const {
    return this->visit([](auto& t) { return t.home(); });
  }

 private:
  friend Base;
  Tree() = default;
};

// The name every index namespace offers (dmrt/runtime/index.h's Index concept).
template <Transport T>
using Index = Tree<T>;

}  // namespace dmrt::dmtree
