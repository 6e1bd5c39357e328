// ROLEX index: learned models cached on compute nodes over one-sided leaves, LT/SLT and retraining.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmrt/indexes/common/faults.h"
#include "dmrt/indexes/common/kv_block.h"
#include "dmrt/indexes/common/local_lock_table.h"
#include "dmrt/indexes/common/rdwc.h"
#include "dmrt/indexes/rolex/detail/bulk_load.h"
#include "dmrt/indexes/rolex/detail/layout.h"
#include "dmrt/indexes/rolex/detail/model_cache.h"
#include "dmrt/indexes/rolex/detail/options.h"
#include "dmrt/indexes/rolex/detail/remote.h"
#include "dmrt/indexes/rolex/detail/retrain.h"
#include "dmrt/indexes/rolex/detail/upper.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::rolex {

template <Transport T>
class Index : public std::enable_shared_from_this<Index<T>> {
 public:
  using Options = rolex::Options;
  class Handle;
  using ValueFn = rolex::ValueFn;

  // Creates the index on the first memory node; bulk loads `sorted_initial_keys` (ascending,
  // distinct) with values value_of(key) (default: the key's 8 bytes).
  [[gnu::noinline]] static std::shared_ptr<Index> create(
      Client<T>& c, const Options& o, std::span<const Key> sorted_initial_keys = {},
      ValueFn value_of = nullptr) {
    validate(o);
    auto mem = c.memory_nodes();
    if (mem.empty()) throw ConfigError("rolex: the cluster has no memory node");
    NodeId node = mem.front();
    bulk_load(c, node, o, sorted_initial_keys, value_of);
    return attach(c, o);
  }

  // Joins an index created by another compute node or process: fresh model cache.
  [[gnu::noinline]] static std::shared_ptr<Index> attach(Client<T>& c, const Options& o) {
    auto mem = c.memory_nodes();
    if (mem.empty()) throw ConfigError("rolex: the cluster has no memory node");
    Remote r;
    if (!Remote::load(c, mem.front(), o.root_slot, r))
      throw ConfigError("rolex: no index published at root slot " + std::to_string(o.root_slot));
    auto idx = std::shared_ptr<Index>(new Index(o, r));
    idx->group_keys_.resize(r.meta.groups);
    constexpr FlushHint kInv = FlushHint::kInvalidate;  // attach: what another host built
    read_words(c, r.group_key(0), idx->group_keys_, kInv);
    uint64_t upper_words =
        c.template read_value<uint64_t>(GlobalAddress::from_raw(r.meta.upper), kInv);
    std::vector<uint64_t> upper(upper_words);
    read_words(c, GlobalAddress::from_raw(r.meta.upper), upper, kInv);
    if (upper_words < 2 || !UpperModels::parse(upper.data(), idx->upper_))
      throw TransportError("rolex: bad upper models object");
    return idx;
  }

  Handle handle(Client<T>& c) { return Handle(this->shared_from_this(), c); }

  // Compute-node figures (no verbs).
  [[gnu::noinline]] IndexStats stats() {
    IndexStats s;
    s["model_refreshes"] = double(cache_.model_refreshes());
    s["table_refreshes"] = double(cache_.table_refreshes());
    s["read_retries"] = double(read_retries_.load());
    s["lock_retries"] = double(lock_retries_.load());
    s["locks_taken_over"] = double(takeovers_.load());
    s["model_misses"] = double(model_misses_.load());
    s["full_slt_waits"] = double(full_slt_waits_.load());
    s["compute_retrainings"] = double(compute_retrains_.load());
    s["unlinked_leaves"] = double(unlinked_leaves_.load());
    s["locked_table_reads"] = double(locked_table_reads_.load());
    s["cache_bytes"] = double(cache_bytes());
    s["groups"] = double(remote_.meta.groups);
    s["upper_levels"] = double(upper_.levels.size());
    s["upper_models"] = double(upper_.segments());
    s["upper_misses"] = double(upper_misses_.load());
    uint64_t models = 0, cached = 0;
    for (size_t g = 0; g < cache_.groups(); ++g)
      if (auto v = cache_.get(g)) models += v->m.segments.size(), ++cached;
    s["models"] = double(models);  // PLR segments of the cached groups
    s["cached_groups"] = double(cached);
    if (opts_.rdwc) rdwc_.add_stats(s);
    if (opts_.lock_sharing) s["handovers"] = double(llt_.handovers());
    return s;
  }
  // Adds the pool-wide counters (a few reads with `c`): retrainings, synonym_leaves, leaves.
  [[gnu::noinline]] IndexStats stats(Client<T>& c) {
    IndexStats s = stats();
    const Remote& r = remote_;
    Meta m;
    c.read(r.meta_addr, &m, sizeof(m));
    s["retrainings"] = double(m.retrainings);
    s["synonym_leaves"] = double(m.synonym_leaves);
    s["retrain_requests"] = double(m.retrain_requests);
    s["leaves"] = double(c.template read_value<uint64_t>(r.alloc_word()));
    uint64_t models = 0;
    for (uint64_t g = 0; g < r.meta.groups; ++g) {
      GlobalAddress a = GlobalAddress::from_raw(c.template read_value<uint64_t>(r.group_ptr(g)));
      ModelHeader h;
      c.read(a, &h, sizeof(h));
      models += h.segments;
    }
    s["models"] = double(models);
    return s;
  }
  uint64_t cache_bytes() const {
    return cache_.bytes() + group_keys_.size() * 8 + (opts_.upper_models ? upper_.bytes() : 0);
  }
  const Remote& remote() const { return remote_; }
  // The cached upper level: the groups' smallest keys and the models trained over them.
  const std::vector<Key>& group_keys() const { return group_keys_; }
  const UpperModels& upper_models() const { return upper_; }
  const Options& options() const { return opts_; }

 private:
  Index(const Options& o, const Remote& r)
      : opts_(o),
        hints_(FlushHints::of(o.faults.skip_flush)),
        remote_(r),
        cache_(r, hints_),
        rdwc_(o.rdwc ? rdwc::Combiner::kSlots : 1, rdwc::Combiner::kLimit),
        llt_(4096, o.handover_max) {
    if (!o.indirect) opts_.value_size = r.geo.value_size;  // indirect: the leaf holds pointers
    opts_.leaf_slots = r.geo.slots;
    opts_.epsilon = static_cast<uint32_t>(r.meta.epsilon);
  }

  static void validate(const Options& o) {
    if (o.value_size == 0 || o.value_size > 1024)
      throw ConfigError("rolex: value_size must be in [1, 1024]");
    // Each field's range (Options::fields()); retrain_threshold stops below the last SLT slot.
    static_assert(kSltSlots - 2 == 254, "rolex::Options::fields() bounds retrain_threshold");
    validate_option_fields("rolex", o);
    if (!(o.fill > 0 && o.fill <= 1.0)) throw ConfigError("rolex: fill must be in (0, 1]");
    if (o.root_slot >= layout::kRootSlots) throw ConfigError("rolex: root_slot out of range");
  }

  // ---- where a key lives: upper models, then the group's model -------------------------------
  // The group of k: the last whose smallest key is <= k. The upper models bound the search to
  // their error window (a miss falls back to the full search, counted); the ablation searches
  // all group keys.
  size_t group_of(Key k) {
    if (opts_.upper_models) {
      uint64_t misses = 0;
      size_t g = upper_.locate(group_keys_, k, opts_.epsilon, misses);
      if (misses) upper_misses_.fetch_add(misses, std::memory_order_relaxed);
      return g;
    }
    auto it = std::upper_bound(group_keys_.begin(), group_keys_.end(), k);
    return it == group_keys_.begin() ? 0 : static_cast<size_t>(it - group_keys_.begin() - 1);
  }

  // Owner chain of `k` (and the model's L_range, Eq. 2, in lo/hi). The model narrows the search
  // over the boundaries to [lo-1, hi]; a miss (floating point) falls back to a full search.
  uint64_t owner(const View& v, Key k, uint64_t& lo, uint64_t& hi) {
    const auto& segs = v.m.segments;
    size_t s = 0;
    {
      size_t a = 0, b = segs.size();
      while (b - a > 1) {
        size_t mid = (a + b) / 2;
        if (segs[mid].first_key <= k)
          a = mid;
        else
          b = mid;
      }
      s = a;
    }
    const Segment& seg = segs[s];
    double p = seg.predict(k), eps = double(opts_.epsilon), d = double(opts_.leaf_slots);
    auto clampl = [&](double x) -> uint64_t {
      double f = std::floor(x / d);
      if (!(f >= double(seg.leaf_lo))) return seg.leaf_lo;
      if (f >= double(seg.leaf_hi)) return seg.leaf_hi;
      return static_cast<uint64_t>(f);
    };
    lo = clampl(p - eps);
    hi = clampl(p + eps);
    const auto& B = v.m.boundaries;
    uint64_t n = B.size();
    uint64_t a = lo > 0 ? lo - 1 : 0;
    uint64_t o =
        static_cast<uint64_t>(std::upper_bound(B.begin() + a, B.begin() + hi + 1, k) - B.begin());
    if (o > a && (o == n || k < B[o])) return o - 1;
    model_misses_.fetch_add(1, std::memory_order_relaxed);
    o = static_cast<uint64_t>(std::upper_bound(B.begin(), B.end(), k) - B.begin());
    return o == 0 ? 0 : o - 1;
  }

  Options opts_;
  FlushHints hints_;  // the flush points' hints (opts_.faults.skip_flush removes some)
  Remote remote_;
  std::vector<Key> group_keys_;  // the groups' smallest keys (the bottom models' first keys)
  UpperModels upper_;
  ModelCache cache_;  // this compute node's views of the groups
  // One combiner per compute node: every compute node's handles may share this Index.
  rdwc::PerNode rdwc_;
  // One local lock table per compute node (lock_sharing), for the same reason.
  btree::PerNodeLockTables llt_;
  std::atomic<uint64_t> read_retries_{0}, lock_retries_{0}, model_misses_{0}, full_slt_waits_{0},
      compute_retrains_{0}, unlinked_leaves_{0}, upper_misses_{0}, locked_table_reads_{0},
      takeovers_{0};

 public:
  // Per-client handle: one fiber's operations. All verbs are one-sided.
  class Handle {
   public:
    Handle(std::shared_ptr<Index> idx, Client<T>& c)
        : x_(std::move(idx)),
          c_(&c),
          rdwc_(x_->opts_.rdwc ? &x_->rdwc_.of(c.home_node()) : nullptr),
          llt_(x_->opts_.lock_sharing ? &x_->llt_.of(c.home_node()) : nullptr) {}

    // With RDWC on, a search of k that another search of k on this compute node is running
    // takes its result, and concurrent updates of k are combined into one write of the last
    // queued value; inserts and deletes run themselves (dmrt/indexes/common/rdwc.h).
    [[gnu::noinline]] bool search(Key k, std::string& out) {
      if (rdwc_)
        return rdwc_->run(*c_, k, false, {}, &out,
                          [&](std::string_view, std::string* o) { return search_direct(k, *o); });
      return search_direct(k, out);
    }
    bool insert(Key k, std::string_view v) { return write_op(Op::kInsert, k, v); }
    bool update(Key k, std::string_view v) {
      if (!rdwc_) return write_op(Op::kUpdate, k, v);
      if (v.size() > x_->opts_.value_size)  // before queueing: it must fail only its own caller
        return write_op(Op::kUpdate, k, v);
      return rdwc_->run(*c_, k, true, v, nullptr, [&](std::string_view wv, std::string*) {
        return write_op(Op::kUpdate, k, wv);
      });
    }
    bool remove(Key k) { return write_op(Op::kRemove, k, {}); }

    // Up to `count` pairs with key >= from, ascending. Each round is one batch of leaf reads over
    // consecutive chains (validated like a search); per-leaf, not whole-scan, atomicity.
    [[gnu::noinline]] void scan(Key from, size_t count,
                                std::vector<std::pair<Key, std::string>>& rows) {
      rows.clear();
      if (count == 0) return;
      Index& x = *x_;
      const Remote& r = x.remote_;
      uint32_t vs = r.geo.value_size;  // indirect: the pointer words (read_blocks below)
      uint64_t g = x.group_of(from);
      Key cur = from;
      std::vector<ChainLink> chain, links;
      std::vector<Leaf> leaves;
      while (rows.size() < count && g < r.meta.groups) {
        auto v = x.cache_.view(*c_, g);
        uint64_t lo, hi;
        uint64_t j = x.owner(*v, cur, lo, hi);
        // Chains j..m: enough leaves for what is missing, plus one.
        size_t want = (count - rows.size() + x.opts_.leaf_slots - 1) / x.opts_.leaf_slots + 1;
        links.clear();
        uint64_t m = j;
        bool torn = false;
        for (; m < v->m.lt.size(); ++m) {
          if (!walk_chain(v->m.lt[m], v->m.slt.data(), chain)) {
            torn = true;
            break;
          }
          links.insert(links.end(), chain.begin(), chain.end());
          if (links.size() >= std::min<size_t>(want, 64)) {
            ++m;
            break;
          }
        }
        if (torn) {
          x.cache_.refresh(*c_, g, v);
          continue;
        }
        // Every leaf is read whole below: the images only need to exist (kept from earlier
        // searches: a search allocates nothing once they do).
        while (leaves.size() < links.size()) leaves.emplace_back(r.geo);
        leaves.erase(leaves.begin() + static_cast<ptrdiff_t>(links.size()), leaves.end());
        uint64_t ptr = 0, use = 0;
        MultiBatch mb;
        reads_.post(mb, r, links, leaves, x.opts_.coalesce_leaf_reads, x.hints_.leaf_read);
        mb.read(v->addr + kSltOffset, &use, 8, x.hints_.table_read);
        mb.read(r.group_ptr(g), &ptr, 8, x.hints_.model_read);
        mb.run(*c_);
        reads_.finish(leaves);
        if (!validate(g, v, links, leaves, ptr, use)) continue;
        for (size_t i = 0; i < leaves.size() && rows.size() < count; ++i) {
          const Leaf& l = leaves[i];
          for (uint32_t s = l.lower_bound(cur); s < l.count() && rows.size() < count; ++s) {
            rows.emplace_back(l.key(s), std::string());
            load_value(l.value(s), vs, rows.back().second);
          }
        }
        if (m < v->m.lt.size()) {
          cur = v->m.boundaries[m];
        } else {
          ++g;
          if (g < r.meta.groups) cur = std::max(cur, x.group_keys_[g]);
        }
      }
      if (x.opts_.indirect) read_blocks(rows);
    }

    Client<T>& client() { return *c_; }
    uint64_t cache_bytes() const { return 0; }  // the model cache is per compute node (Index)

   private:
    enum class Op { kInsert, kUpdate, kRemove };
    bool search_direct(Key k, std::string& out) {
      Found& f = found_;
      if (!find(k, f)) return false;
      if (!x_->opts_.indirect) {
        load_value(f.leaf->value(f.pos), x_->opts_.value_size, out);
        return true;
      }
      Batch b;  // the KV block: one more round trip
      kvblock::read_into(b, f.leaf->value(f.pos)[0], block_buf_);
      b.hint(x_->hints_.leaf_read);  // blocks are data the leaves publish
      c_->run(b);
      kvblock::decode(block_buf_, x_->opts_.value_size, out);
      return true;
    }
    // Indirect scans: the rows hold their pairs' pointer words; every row's block is READ in one
    // more round trip (all on the index's memory node: one MultiBatch).
    void read_blocks(std::vector<std::pair<Key, std::string>>& rows) {
      if (rows.empty()) return;
      if (scan_blocks_.size() < rows.size()) scan_blocks_.resize(rows.size());
      MultiBatch mb;
      for (size_t i = 0; i < rows.size(); ++i) {
        uint64_t p = 0;
        std::memcpy(&p, rows[i].second.data(), sizeof p);
        scan_blocks_[i].resize(kvblock::length(p));
        mb.read(kvblock::address(p), scan_blocks_[i].data(), kvblock::length(p),
                x_->hints_.leaf_read);
      }
      mb.run(*c_);
      for (size_t i = 0; i < rows.size(); ++i)
        kvblock::decode(scan_blocks_[i], x_->opts_.value_size, rows[i].second);
    }
    // Where find() saw k: a leaf image of this handle's, valid until its next find().
    struct Found {
      const Leaf* leaf = nullptr;
      uint32_t pos = 0;
    };

    // Checks a batch's leaves against the view; refreshes and returns false when it must be redone.
    bool validate(uint64_t g, const std::shared_ptr<const View>& v,
                  const std::vector<ChainLink>& links, const std::vector<Leaf>& leaves,
                  uint64_t ptr, uint64_t use) {
      Index& x = *x_;
      if (ptr != v->addr.raw()) {
        why_ = "model pointer";
        x.cache_.load(*c_, g);
        return false;
      }
      bool stale = !injected(x.opts_.faults.skip_slot_use_check) && use != v->slot_use();
      bool torn = false;
      for (size_t i = 0; i < links.size(); ++i) {
        if (leaves[i].valid() || injected(x.opts_.faults.skip_validation)) {
          if (leaves[i].next() != links[i].next && !injected(x.opts_.faults.skip_slot_use_check))
            stale = true;
        } else {
          torn = true;
        }
      }
      if (stale) {
        why_ = "stale use " + std::to_string(use) + " vs " + std::to_string(v->slot_use());
        for (size_t i = 0; i < links.size(); ++i)
          why_ += " [" + std::to_string(links[i].leaf) + " next " +
                  std::to_string(leaves[i].next()) + "/" + std::to_string(links[i].next) + "]";
        x.cache_.refresh(*c_, g, v);
        return false;
      }
      if (torn) {
        why_ = "torn";
        x.read_retries_.fetch_add(1, std::memory_order_relaxed);
        c_->pause();
        return false;
      }
      return true;
    }

    // Search: one batch of leaf reads (the owner chain, or all of L_range) + slot_use + model ptr.
    bool find(Key k, Found& f) {
      Index& x = *x_;
      const Remote& r = x.remote_;
      uint64_t g = x.group_of(k);
      std::vector<ChainLink>& chain = find_chain_;
      std::vector<ChainLink>& links = find_links_;
      std::vector<Leaf>& leaves = find_leaves_;
      for (uint64_t round = 0;; ++round) {
        if (round == 1000000)
          throw TransportError("rolex: search of " + std::to_string(k) +
                               " never validated: " + why_);
        // Only view() below changes what v refers to.
        const std::shared_ptr<const View>& v = view(g);
        uint64_t lo, hi;
        uint64_t j = x.owner(*v, k, lo, hi);
        if (!walk_chain(v->m.lt[j], v->m.slt.data(), chain)) {
          x.cache_.refresh(*c_, g, v);
          continue;
        }
        links = chain;
        size_t mine = links.size();
        if (x.opts_.read_whole_range) {
          std::vector<ChainLink>& other = find_other_;
          for (uint64_t q = lo > 0 ? lo - 1 : 0; q <= hi; ++q)
            if (q != j && walk_chain(v->m.lt[q], v->m.slt.data(), other) &&
                links.size() + other.size() <= 30)
              links.insert(links.end(), other.begin(), other.end());
        }
        // Every leaf is read whole below: the images only need to exist (kept from earlier
        // searches, never erased: a search allocates nothing once they do). Only the first
        // links.size() are this search's.
        while (leaves.size() < links.size()) leaves.emplace_back(r.geo);
        uint64_t ptr = 0, use = 0;
        MultiBatch& mb = find_mb_;  // kept: its batches vector allocates once
        mb.clear();
        reads_.post(mb, r, links, leaves, x.opts_.coalesce_leaf_reads, x.hints_.leaf_read);
        mb.read(v->addr + kSltOffset, &use, 8, x.hints_.table_read);  // after the leaves (A14)
        mb.read(r.group_ptr(g), &ptr, 8, x.hints_.model_read);
        mb.run(*c_);
        reads_.finish(leaves);
        links.erase(links.begin() + mine, links.end());  // validate checks the owner chain's
        if (!validate(g, v, links, leaves, ptr, use)) {
          // A retraining frozen half way by a process that died (step 4 rewrote some leaf
          // headers) never validates: finish it (no verb until the lease says it is dead).
          const std::shared_ptr<const View>& now = view(g);
          if (j < now->m.lt.size() && entry::retired(now->m.lt[j]))
            take_over_retraining(g, *now, now->m.lt[j]);
          continue;
        }
        for (size_t i = 0; i < mine; ++i) {
          const Leaf& l = leaves[i];
          uint32_t p = l.find(k);
          if (p < l.count()) {
            f.leaf = &l;
            f.pos = p;
            return true;
          }
        }
        return false;
      }
    }

    // Group g's view as this handle last took it from the compute node's cache, or the cache's
    // current one when that was replaced since. A search then copies no shared_ptr and takes no
    // lock: every search of a hot group wrote the same two cache lines, the stripe's mutex and
    // the view's reference count, from both threads (README, §3.4 row). The reference stays valid
    // until this handle's next view(g).
    const std::shared_ptr<const View>& view(uint64_t g) {
      Index& x = *x_;
      if (views_.empty()) views_.resize(x.cache_.groups());
      // The count is read first: a view replaced after it is taken again next time.
      const uint64_t gen = x.cache_.generation(g);
      Held& h = views_[g];
      if (h.v && h.gen == gen) return h.v;
      h.v = x.cache_.view(*c_, g);
      h.gen = gen;
      return h.v;
    }

    // A locked chain: LT entry (as locked), its links, fresh leaf images, and the SLT the links
    // were walked through (the cached one, corrected by what the leaves say, or a fresh read).
    struct Locked {
      uint64_t g = 0, j = 0;
      std::shared_ptr<const View> v;
      uint64_t lt = 0;     // unlocked value
      GlobalAddress lock;  // the LT entry (with lock_sharing: this handle holds its local slot)
      std::vector<ChainLink> links;
      std::vector<Leaf> leaves;
      std::vector<uint64_t> slt;
    };

    // Lock the owner chain of k (paper: CAS the trained leaf's LT entry; then re-read the chain).
    // combine_lock_and_read posts the CAS and the reads in one batch (A16). The reads are the
    // chain's leaves as the cached tables name them, plus the 2 KiB SLT with read_slt_under_lock.
    // Indirect items: the pending KV block's WRITE, once, in the first batch lock_chain runs.
    void post_block(MultiBatch& mb) {
      if (!pending_block_bytes_) return;
      mb.write(pending_block_, block_buf_.data(), pending_block_bytes_, x_->hints_.leaf_write);
      pending_block_bytes_ = 0;
    }
    void lock_chain(Key k, Locked& L) {
      Index& x = *x_;
      const Remote& r = x.remote_;
      const bool with_slt = x.opts_.read_slt_under_lock;
      L.g = x.group_of(k);
      std::vector<ChainLink> cached;
      for (;;) {
        auto v = x.cache_.view(*c_, L.g);
        uint64_t lo, hi;
        L.j = x.owner(*v, k, lo, hi);
        L.v = v;
        if (!walk_chain(v->m.lt[L.j], v->m.slt.data(), cached)) {
          x.cache_.refresh(*c_, L.g, v);
          continue;
        }
        uint64_t expect = entry::unlocked(v->m.lt[L.j]);
        GlobalAddress lt_addr = v->addr + kLtOffset + 8 * L.j;
        L.slt = v->m.slt;
        L.leaves.assign(cached.size(), Leaf(r.geo));
        auto post_reads = [&](MultiBatch& mb) {
          if (with_slt)
            mb.read(v->addr + kSltOffset, L.slt.data(), kSltSlots * 8, x.hints_.table_read);
          for (size_t i = 0; i < cached.size(); ++i)
            mb.read(r.leaf(cached[i].leaf), L.leaves[i].data(), r.geo.bytes(), x.hints_.leaf_read);
        };
        // Lock sharing: queue locally first; a handed-over lock is already held for this
        // compute node, with the entry's value as the last holder left it.
        L.lock = lt_addr;
        bool handed = llt_ && llt_->acquire(*c_, lt_addr, &expect);
        uint64_t old = 0;
        bool got = handed;
        HolderWatch watch;
        uint64_t from = expect;  // the CAS's expected word: the free entry, or a dead holder's
        try {
          for (int spins = 0; !got; ++spins) {
            MultiBatch mb;
            mb.cas(lt_addr, from, expect | entry::kLock | entry::holder_bits(c_->process_tag()),
                   &old);
            post_block(mb);
            if (x.opts_.combine_lock_and_read) post_reads(mb);
            mb.run(*c_);
            if (old == from) {
              got = true;
              if (from != expect) took_over();
              break;
            }
            from = expect;
            if (entry::retired(old)) {  // model replaced, or being replaced: reload
              take_over_retraining(L.g, *v, old);
              break;
            }
            if (entry::locked(old)) {  // held: wait
              if (spins > 2000000)
                throw TransportError("rolex: lock never released, entry " + std::to_string(old));
              // A holder whose process was declared dead and fenced never lets go: take the
              // lock by a CAS from exactly the word it left (one waiter wins).
              if (watch.dead_tag(*c_, old, entry::holder(old))) {
                expect = entry::unlocked(old);
                from = old;
                continue;
              }
              x.lock_retries_.fetch_add(1, std::memory_order_relaxed);
              c_->pause();
              continue;
            }
            expect = old;  // chain head moved: retry with it
            from = expect;
          }
        } catch (...) {
          if (llt_) llt_->release(lt_addr, false);  // the local slot only: no remote lock
          throw;
        }
        if (!got) {
          if (llt_) llt_->release(lt_addr, false);
          x.cache_.load(*c_, L.g);
          continue;
        }
        L.lt = expect;
        if (handed || !x.opts_.combine_lock_and_read) {
          MultiBatch mb;
          post_block(mb);  // a handed-over lock: no CAS posted it
          post_reads(mb);
          mb.run(*c_);
        }
        settle_chain(L, cached, with_slt);
        return;
      }
    }

    // Under the lock the chain is stable, and its true shape is: the LT entry (known exactly from
    // the CAS), then for each link the SLT entry's leaf number (fixed once the entry is written:
    // only its `next` ever changes) and the successor slot, which the leaf's own `next` field
    // repeats. So the leaves read for the cached chain either agree with it (the common case: no
    // more reads) or tell where it is stale. A successor slot the cached SLT already holds is
    // followed without a read; an unknown one costs one round trip for the SLT
    // (`locked_table_reads`), then one for the leaves not yet read. `read` names the leaves whose
    // images L.leaves holds.
    void settle_chain(Locked& L, std::vector<ChainLink> read, bool fresh_slt) {
      Index& x = *x_;
      const Remote& r = x.remote_;
      for (int rr = 0;; ++rr) {
        if (rr > 100000) {
          unlock(L, false);  // errors under the lock release it: peers must not wait forever
          throw TransportError("rolex: locked chain never validates");
        }
        if (!walk_chain(L.lt, L.slt.data(), L.links)) {
          if (fresh_slt) {
            unlock(L, false);
            throw TransportError("rolex: locked chain has an unwritten SLT entry");
          }
          MultiBatch mb;
          mb.read(L.v->addr + kSltOffset, L.slt.data(), kSltSlots * 8, x.hints_.table_read);
          mb.run(*c_);
          x.locked_table_reads_.fetch_add(1, std::memory_order_relaxed);
          fresh_slt = true;
          continue;
        }
        bool all_match = L.links.size() == read.size();  // the common case: nothing to redo
        for (size_t i = 0; all_match && i < read.size(); ++i)
          all_match = read[i].leaf == L.links[i].leaf && leaf_matches(L.leaves[i], L.links[i]);
        if (all_match) return;
        // Keep the images read for the same leaves, in chain order.
        std::vector<Leaf> images(L.links.size(), Leaf(r.geo));
        std::vector<bool> have(L.links.size(), false);
        bool corrected = false, retry = false;
        for (size_t i = 0; i < L.links.size(); ++i) {
          for (size_t q = 0; q < read.size(); ++q)
            if (read[q].leaf == L.links[i].leaf) {
              have[i] = L.leaves[q].valid();
              retry |= !have[i];  // torn: read it again
              if (have[i]) images[i] = L.leaves[q];
              break;
            }
          if (!have[i] || images[i].next() == L.links[i].next) continue;
          if (fresh_slt || i == 0) {  // the entry is known: the image is stale, re-read it
            have[i] = false;
            retry = true;
            continue;
          }
          // The leaf knows its successor; the cached SLT entry (i > 0) does not.
          L.slt[L.links[i].slot] = entry::with_next(L.slt[L.links[i].slot], images[i].next());
          corrected = true;
          break;
        }
        if (corrected) continue;
        std::vector<size_t> need;
        for (size_t i = 0; i < L.links.size(); ++i)
          if (!have[i]) need.push_back(i);
        L.leaves = std::move(images);
        read = L.links;
        if (need.empty()) return;
        if (retry) x.read_retries_.fetch_add(1, std::memory_order_relaxed);
        MultiBatch mb;
        for (size_t i : need)
          mb.read(r.leaf(L.links[i].leaf), L.leaves[i].data(), r.geo.bytes(), x.hints_.leaf_read);
        mb.run(*c_);
      }
    }

    GlobalAddress lt_addr(const Locked& L) const { return L.v->addr + kLtOffset + 8 * L.j; }
    // The chain's lock was taken from a dead holder. The entry it left names the chain as it was
    // (the holder writes the entry last, with its release). A value it rewrote whole in a leaf
    // stands; a chain it left half changed (a torn leaf, a leaf whose successor the entry does
    // not name yet) never validates in settle_chain, which then ends in an error: not repaired.
    void took_over() { x_->takeovers_.fetch_add(1, std::memory_order_relaxed); }
    // Runs `b` (the chain's writes) with the release of its lock: the LT entry, unlocked with
    // value `lt`, is the batch's last WRITE (one doorbell, §3.4), unless the lock is handed to a
    // local waiter (lock sharing): then the entry is written (still locked) only if its value
    // changed, and the next local holder starts from `lt`. `share` = false on error paths.
    void release(const Locked& L, Batch& b, uint64_t lt, bool share = true) {
      const bool hand = share && llt_ && llt_->should_hand_over(L.lock);
      uint64_t e = hand ? lt | entry::kLock | entry::holder_bits(c_->process_tag()) : lt;
      if (!hand || lt != L.lt) b.release(L.lock, &e, 8);
      try {
        if (!b.empty()) c_->run(b);
      } catch (...) {
        if (llt_) llt_->release(L.lock, false);
        throw;
      }
      if (llt_) llt_->release(L.lock, hand, lt);
    }
    void unlock(const Locked& L, bool share = true) {
      Batch b;
      release(L, b, L.lt, share);
    }

    [[gnu::noinline]] bool write_op(Op op, Key k, std::string_view val) {
      Index& x = *x_;
      const Remote& r = x.remote_;
      uint32_t vs = x.opts_.value_size;
      if (k == kEmptyKey) throw LimitError("rolex: key 2^64-1 is reserved");
      if (op != Op::kRemove && val.size() > vs)
        throw LimitError("rolex: value of " + std::to_string(val.size()) +
                         " bytes exceeds value_size " + std::to_string(vs));
      std::vector<uint64_t> vw(r.geo.vwords(), 0);
      // Indirect: the new KV block goes with the lock's first batch (lock_chain), before the
      // leaf that points to it; unused when the op finds nothing to do.
      pending_block_bytes_ = 0;
      if (op != Op::kRemove && x.opts_.indirect) {
        kvblock::encode(val, block_buf_);
        const uint32_t n = static_cast<uint32_t>(block_buf_.size());
        pending_block_ = c_->alloc_on(r.node, n, 8);
        pending_block_bytes_ = n;
        vw[0] = kvblock::pack(pending_block_, n);
      } else if (op != Op::kRemove) {
        store_value(vw.data(), val, vs);
      }
      for (;;) {
        if (x.opts_.fetch_before_lock) {  // paper step 1: fetch as a search
          Found f;
          bool present = find(k, f);
          if (op == Op::kInsert && present) return false;
          if (op != Op::kInsert && !present) return false;
        }
        if (op == Op::kInsert && injected(x.opts_.faults.ack_without_write)) return true;
        Locked L;
        lock_chain(k, L);
        // Locate k in the chain.
        size_t at = L.leaves.size();
        uint32_t pos = 0;
        for (size_t i = 0; i < L.leaves.size(); ++i) {
          uint32_t p = L.leaves[i].find(k);
          if (p < L.leaves[i].count()) {
            at = i;
            pos = p;
            break;
          }
        }
        if (op != Op::kInsert) {
          if (at == L.leaves.size()) {
            unlock(L);
            return false;
          }
          if (op == Op::kUpdate)
            std::copy(vw.begin(), vw.end(), L.leaves[at].value(pos));
          else
            L.leaves[at].erase_at(pos);
          if (op == Op::kRemove && at > 0 && L.leaves[at].count() == 0 &&
              x.opts_.unlink_empty_synonyms)
            return unlink(L, at);
          L.leaves[at].seal();
          Batch b;
          b.write(r.leaf(L.links[at].leaf), L.leaves[at].data(), r.geo.bytes())
              .hint(x.hints_.leaf_write);
          release(L, b, L.lt);
          return true;
        }
        if (at != L.leaves.size()) {
          unlock(L);
          return false;
        }
        // Target: last non-empty leaf whose first key <= k, else the first leaf.
        size_t t = 0;
        for (size_t i = 0; i < L.leaves.size(); ++i)
          if (L.leaves[i].count() > 0 && L.leaves[i].key(0) <= k) t = i;
        Leaf& tl = L.leaves[t];
        if (!tl.full()) {
          tl.insert_at(tl.lower_bound(k), k, vw.data());
          tl.seal();
          Batch b;
          b.write(r.leaf(L.links[t].leaf), tl.data(), r.geo.bytes()).hint(x.hints_.leaf_write);
          release(L, b, L.lt);
          return true;
        }
        // Full: a synonym leaf (Fig. 5). One batch: FAA alloc_num, FAA slot_use, FAA counter.
        uint64_t leafno = 0, slot = 0;
        {
          Batch b;
          b.faa(r.alloc_word(), 1, &leafno)
              .faa(L.v->addr + kSltOffset, 1, &slot)
              .faa(r.counter(kMetaSynonyms), 1, nullptr);
          c_->run(b);
        }
        if (slot >= kSltSlots) {  // SLT full: let the retraining catch up
          unlock(L, false);
          wait_for_retrain(L.g, L.v);
          continue;
        }
        if (leafno >= r.total_leaves) {
          unlock(L, false);
          throw PoolExhausted("rolex: the leaf region is full (" + std::to_string(r.total_leaves) +
                              " leaves; raise Options::max_leaves)");
        }
        return split_insert(L, t, k, vw, leafno, static_cast<uint32_t>(slot));
      }
    }

    // A delete emptied synonym leaf `at` (§3.4 delete: "linking L5 to L7"): its predecessor in
    // the chain now links to its successor, in the predecessor leaf's `next` field and in the
    // predecessor's table entry (the LT entry, written with the unlock, or its SLT entry). One
    // batch with the unlock, so the delete keeps its round trips. `slot_use` does not change; a
    // reader whose cached SLT still holds the leaf reads the predecessor's new `next` and resyncs
    // (README, "Reads are validated"). The leaf is written empty first and never reused (A19).
    bool unlink(Locked& L, size_t at) {
      const Remote& r = x_->remote_;
      const size_t pred = at - 1;
      const uint32_t succ = L.links[at].next;
      Leaf& emptied = L.leaves[at];
      emptied.seal();
      Leaf& pl = L.leaves[pred];
      pl.set_next(succ);
      pl.seal();
      uint64_t lt = L.lt, pred_entry = 0;
      if (pred == 0)
        lt = entry::with_next(lt, succ);
      else
        pred_entry = entry::with_next(L.slt[L.links[pred].slot], succ);
      Batch b;
      const FlushHints& h = x_->hints_;
      b.write(r.leaf(L.links[at].leaf), emptied.data(), r.geo.bytes()).hint(h.leaf_write);
      b.write(r.leaf(L.links[pred].leaf), pl.data(), r.geo.bytes()).hint(h.leaf_write);
      if (pred != 0)
        b.write(L.v->addr + kSltOffset + 8 * L.links[pred].slot, &pred_entry, 8)
            .hint(h.table_write);
      release(L, b, lt);
      x_->unlinked_leaves_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }

    bool split_insert(Locked& L, size_t t, Key k, const std::vector<uint64_t>& vw, uint64_t leafno,
                      uint32_t slot) {
      Index& x = *x_;
      const Remote& r = x.remote_;
      (void)x;
      Leaf& tl = L.leaves[t];
      Leaf nl(r.geo);
      nl.clear();
      bool tail = t + 1 == L.leaves.size() && k > tl.key(tl.count() - 1);
      if (tail) {
        nl.insert_at(0, k, vw.data());  // ascending inserts: keep full leaves full
      } else {
        tl.move_tail(tl.count() / 2, nl);
        if (k < nl.key(0))
          tl.insert_at(tl.lower_bound(k), k, vw.data());
        else
          nl.insert_at(nl.lower_bound(k), k, vw.data());
      }
      uint32_t succ = L.links[t].next;
      nl.set_next(succ);
      tl.set_next(slot);
      nl.seal();
      tl.seal();
      uint64_t new_entry = entry::make(leafno, succ);
      uint64_t lt = L.lt;
      uint64_t t_entry = 0;
      if (t == 0)
        lt = entry::with_next(lt, slot);
      else
        t_entry = entry::with_next(L.slt[L.links[t].slot], slot);
      Batch b;
      const FlushHints& h = x.hints_;
      b.write(r.leaf(leafno), nl.data(), r.geo.bytes()).hint(h.leaf_write);
      b.write(r.leaf(L.links[t].leaf), tl.data(), r.geo.bytes()).hint(h.leaf_write);
      b.write(L.v->addr + kSltOffset + 8 * slot, &new_entry, 8).hint(h.table_write);
      if (t != 0)
        b.write(L.v->addr + kSltOffset + 8 * L.links[t].slot, &t_entry, 8).hint(h.table_write);
      release(L, b, lt);  // only the holder writes a locked entry
      if (slot == x.remote_.meta.retrain_threshold) {
        if (x.opts_.retrain_on_compute)
          retrain_here(L.g);
        else
          enqueue(L.g);
      }
      return true;
    }

    // Group g is frozen by a retraining: `e`, one of its entries, is retired and names the
    // retrainer's process. One declared dead and fenced never finishes it: once `e` has stood for
    // the lease, this client finishes the retraining from the lock word the dead one left
    // (retrain_group). No verb while the retrainer lives, or is the memory node's service (tag 0).
    void take_over_retraining(uint64_t g, const View& v, uint64_t e) {
      Index& x = *x_;
      if (!retrain_watch_.dead_tag(*c_, e, entry::holder(e))) return;
      const uint64_t lw =
          c_->template read_value<uint64_t>(v.addr + kRetrainLockOffset, x.hints_.model_read);
      if (retrain_lock_tag(lw) != entry::holder(e)) return;  // another taker has it now
      if (retrain_group(*c_, x.remote_, g, ServiceOptions{}.train_ns_per_key, x.hints_, lw).done) {
        x.compute_retrains_.fetch_add(1, std::memory_order_relaxed);
        x.takeovers_.fetch_add(1, std::memory_order_relaxed);
      }
    }

    // Options::retrain_on_compute: this client retrains the group (its lock is released; the
    // retraining takes the group's own locks) and loads the new model, charging the training as
    // its own CPU, as a compute host would spend it.
    void retrain_here(uint64_t g) {
      Index& x = *x_;
      if (retrain_group(*c_, x.remote_, g, ServiceOptions{}.train_ns_per_key, x.hints_).done)
        x.compute_retrains_.fetch_add(1, std::memory_order_relaxed);
      x.cache_.load(*c_, g);
    }

    // CirQ append (A10): FAA the tail, then claim the entry; a full queue drops the request
    // (the full-SLT path still catches the group).
    void enqueue(uint64_t g) {
      const Remote& r = x_->remote_;
      uint64_t t = 0;
      Batch b;
      b.faa(r.cirq_tail(), 1, &t).faa(r.counter(kMetaRequests), 1, nullptr);
      c_->run(b);
      c_->cas(r.cirq_entry(t), 0, g + 1);
    }

    void wait_for_retrain(uint64_t g, const std::shared_ptr<const View>& v) {
      Index& x = *x_;
      x.full_slt_waits_.fetch_add(1, std::memory_order_relaxed);
      uint64_t start = c_->now_ns();
      for (;;) {
        uint64_t ptr =
            c_->template read_value<uint64_t>(x.remote_.group_ptr(g), x.hints_.model_read);
        if (ptr != v->addr.raw()) {
          x.cache_.load(*c_, g);
          return;
        }
        if (x.opts_.compute_retrain_fallback) {
          if (retrain_group(*c_, x.remote_, g, 0, x.hints_).done)
            x.compute_retrains_.fetch_add(1, std::memory_order_relaxed);
          x.cache_.load(*c_, g);
          return;
        }
        if (c_->now_ns() - start > x.opts_.full_slt_wait_ns)
          throw LimitError(
              "rolex: group " + std::to_string(g) +
              " has a full synonym leaf table and no retraining service replaced its model "
              "(run rolex::retrain_service on the memory node or set compute_retrain_fallback)");
        c_->pause();
      }
    }

    std::shared_ptr<Index> x_;
    Client<T>* c_;
    rdwc::Combiner* rdwc_;        // this compute node's, when RDWC is on
    btree::LocalLockTable* llt_;  // this compute node's, with lock_sharing
    HolderWatch retrain_watch_;   // take_over_retraining's, across the group's reloads
    std::string why_;
    LeafReads reads_;
    std::vector<uint8_t> block_buf_;                 // indirect: a KV block read or written
    std::vector<std::vector<uint8_t>> scan_blocks_;  // indirect: a scan's rows' blocks
    GlobalAddress pending_block_;                    // indirect: the block lock_chain writes
    uint32_t pending_block_bytes_ = 0;
    // find()'s scratch, kept between searches (capacity only; every search refills them).
    std::vector<ChainLink> find_chain_, find_links_, find_other_;
    std::vector<Leaf> find_leaves_;
    MultiBatch find_mb_;
    Found found_;
    struct Held {
      uint64_t gen = 0;
      std::shared_ptr<const View> v;
    };
    std::vector<Held> views_;  // by group: this handle's copies (view())
  };
};

}  // namespace dmrt::rolex
