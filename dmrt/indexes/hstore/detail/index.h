// HStore index (compute side): create/attach, one-sided GET, writes and SCAN through the servers.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmrt/indexes/hstore/detail/layout.h"
#include "dmrt/indexes/hstore/detail/options.h"
#include "dmrt/indexes/hstore/detail/protocol.h"
#include "dmrt/indexes/hstore/detail/remote.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::hstore {

template <Transport T>
class Index : public std::enable_shared_from_this<Index<T>> {
 public:
  using Options = hstore::Options;
  class Handle;
  using ValueFn = std::function<std::string(Key)>;

  // Formats the hash table on the HTS node and publishes the meta block. `initial_keys`
  // (distinct) are bulk-loaded: records written to the pool, slots written into the table image;
  // the SLS builds its skiplist from the table when it starts, as in a recovery.
  [[gnu::noinline]] static std::shared_ptr<Index> create(Client<T>& c, const Options& o,
                                                         std::span<const Key> initial_keys = {},
                                                         const ValueFn& value_of = nullptr) {
    validate(o);
    auto mem = c.memory_nodes();
    if (mem.empty()) throw ConfigError("hstore: the cluster has no memory node");
    auto pick = [&](int want, NodeId dflt, const char* what) -> NodeId {
      if (want < 0) return dflt;
      if (static_cast<size_t>(want) >= c.node_count() ||
          c.role(static_cast<NodeId>(want)) != NodeRole::kMemory)
        throw ConfigError(std::string("hstore: ") + what + " " + std::to_string(want) +
                          " is not a memory node");
      return static_cast<NodeId>(want);
    };
    Meta m;
    m.hts_node = pick(o.hts_node, mem.front(), "hts_node");
    m.sls_node = pick(o.sls_node, mem.back(), "sls_node");
    for (NodeId n : mem)
      if (n > 255)
        throw ConfigError("hstore: memory node ids above 255 do not fit a 6-byte slot address");
    const MailboxGeometry& g = c.endpoint().mailbox_geometry();
    const size_t mw = max_words(g);
    m.key_size = o.key_size;
    // A ship entry with the longest key must fit one message (so do requests and scan rows).
    const size_t entry = kShipEntryWords + key_words(o.key_size, m.wide());
    if (mw < kShipHeaderWords + entry)
      throw ConfigError("hstore: mailbox slots carry " + std::to_string(mw * 8) +
                        " payload bytes; HStore needs at least " +
                        std::to_string((kShipHeaderWords + entry) * 8) + " for keys of " +
                        std::to_string(o.key_size) + " bytes (raise mailbox.slot_bytes)");
    if (g.mailboxes < 8 + o.logs)
      throw ConfigError("hstore: nodes have " + std::to_string(g.mailboxes) +
                        " mailboxes; HStore needs " + std::to_string(8 + o.logs) +
                        " (raise mailbox.mailboxes)");
    // Server mailboxes from the top of the range, below them the HTS workers' ack boxes; client
    // reply boxes (1 + client id) grow from the bottom.
    m.hts_inbox = g.mailboxes - 1;
    m.hts_ctrl = g.mailboxes - 2;
    m.sls_inbox = g.mailboxes - 3;
    m.sls_ctrl = g.mailboxes - 4;
    m.ack_base = g.mailboxes - 5;
    m.logs = o.logs;
    m.partitions = o.partitions;
    m.query_fibers = o.query_fibers;
    m.ship_batch =
        static_cast<unsigned>(std::min<size_t>(o.ship_batch, (mw - kShipHeaderWords) / entry));
    m.flags = o.sync_skiplist ? meta::kFlagSync : 0;
    m.grace_ns = o.grace_ns;
    m.apply_lag_ns = o.apply_lag_ns;
    uint64_t keys = std::max<uint64_t>(o.expected_keys, initial_keys.size());
    uint64_t want =
        static_cast<uint64_t>(std::ceil(double(keys) / (kSlotsPerBucket * o.load_factor)));
    m.heads = 16;
    while (m.heads < want) m.heads <<= 1;
    m.overflow = std::max<uint64_t>(
        16, static_cast<uint64_t>(std::ceil(double(m.heads) * o.overflow_fraction)));

    m.table = c.alloc_on(m.hts_node, m.buckets() * kBucketBytes, 64);
    m.addr = c.alloc_on(m.hts_node, meta::kBytes, 64);
    m.sls_stats = c.alloc_on(m.sls_node, kSlsStatsBytes, 64);
    std::vector<uint64_t> w(meta::kWords, 0);
    // The table image: zeros, or the bulk-loaded slots.
    std::vector<uint64_t> img(m.buckets() * (kBucketBytes / 8), 0);
    uint64_t used = bulk_load(c, m, initial_keys, value_of, img);
    // Setup's WRITEs (the bulk load's records included) are written back whatever the flush
    // points: the servers read them through their own host's cache.
    write_big(c, m.table, img.data(), img.size() * 8);
    std::vector<uint64_t> zeros(kSlsStatsBytes / 8, 0);
    c.write(m.sls_stats, zeros.data(), kSlsStatsBytes, FlushHint::kWriteBack);
    m.serialize(w.data());
    // HTS serves its table from the start; the SLS is up once it has built its skiplist.
    w[meta::kStatus] = status::make(true, false, 1, 1);
    w[meta::kHtsStats + hts_stat::kKeys] = initial_keys.size();
    w[meta::kHtsStats + hts_stat::kOverflowUsed] = used;
    c.write(m.addr, w.data(), meta::kBytes, FlushHint::kWriteBack);
    uint64_t raw = m.addr.raw();
    c.write(layout::root_slot(mem.front(), o.root_slot), &raw, 8,
            FlushHint::kWriteBack);  // publish last
    return attach(c, o);
  }

  // Joins an index created elsewhere (another compute node or process).
  [[gnu::noinline]] static std::shared_ptr<Index> attach(Client<T>& c, const Options& o) {
    Meta m;
    if (!Meta::load(c, o.root_slot, m))
      throw ConfigError("hstore: no index published at root slot " + std::to_string(o.root_slot));
    return std::shared_ptr<Index>(new Index(o, m));
  }

  Handle handle(Client<T>& c) { return Handle(this->shared_from_this(), c); }

  const Meta& meta() const { return meta_; }
  const Options& options() const { return opts_; }
  // Fibers each server's host must run.
  unsigned hts_fibers() const { return 1 + meta_.logs; }
  unsigned sls_fibers() const { return 1 + meta_.partitions + meta_.query_fibers; }

  // Compute-node figures (no verbs).
  [[gnu::noinline]] IndexStats stats() const {
    IndexStats s;
    s["get_retries"] = double(get_retries_.load());
    s["degraded_gets"] = double(degraded_gets_.load());
    s["write_retries"] = double(write_retries_.load());
    s["scan_retries"] = double(scan_retries_.load());
    s["scan_reanchors"] = double(scan_reanchors_.load());
    s["records_freed"] = double(freed_.load());
    return s;
  }
  // Adds the servers' counters (three reads with `c`).
  [[gnu::noinline]] IndexStats stats(Client<T>& c) const {
    IndexStats s = stats();
    std::vector<uint64_t> w(meta::kWords), v(kSlsStatsBytes / 8);
    c.read(meta_.addr, w.data(), meta::kBytes, FlushHint::kInvalidate);  // the servers' counters
    c.read(meta_.sls_stats, v.data(), kSlsStatsBytes, FlushHint::kInvalidate);
    const uint64_t* h = w.data() + meta::kHtsStats;
    s["keys"] = double(h[hts_stat::kKeys]);
    s["load_factor"] = double(h[hts_stat::kKeys]) / double(meta_.heads * kSlotsPerBucket);
    s["overflow_buckets"] = double(h[hts_stat::kOverflowUsed]);
    s["hts_requests"] = double(h[hts_stat::kRequests]);
    s["batches"] = double(h[hts_stat::kBatches]);
    s["batch_entries_mean"] =
        h[hts_stat::kBatches] ? double(h[hts_stat::kShipped]) / double(h[hts_stat::kBatches]) : 0;
    s["hts_applied"] = double(h[hts_stat::kApplied]);
    s["hts_noops"] = double(h[hts_stat::kNoops]);
    s["dedup_hits"] = double(h[hts_stat::kDedupHits]);
    s["stale_requests"] = double(h[hts_stat::kStale]);
    s["hts_rebuilds"] = double(h[hts_stat::kRebuilds]);
    s["hts_rebuild_ms"] = double(h[hts_stat::kRebuildNs]) / 1e6;
    s["hts_rebuild_keys"] = double(h[hts_stat::kRebuildKeys]);
    s["sls_keys"] = double(v[sls_stat::kKeys]);
    s["sls_logged"] = double(v[sls_stat::kLogged]);
    s["sls_applied_async"] = double(v[sls_stat::kAppliedAsync]);
    s["sls_applied_by_drain"] = double(v[sls_stat::kAppliedByDrain]);
    s["sls_scans"] = double(v[sls_stat::kScans]);
    s["sls_point_reads"] = double(v[sls_stat::kDgets]);
    s["sls_rebuilds"] = double(v[sls_stat::kRebuilds]);
    s["sls_rebuild_ms"] = double(v[sls_stat::kRebuildNs]) / 1e6;
    s["sls_rebuild_keys"] = double(v[sls_stat::kRebuildKeys]);
    s["sls_stale_ships"] = double(v[sls_stat::kStaleShips]);
    s["malformed_messages"] = double(h[hts_stat::kMalformed] + v[sls_stat::kMalformed]);
    s["server_takeovers"] = double(h[hts_stat::kTakeovers] + v[sls_stat::kTakeovers]);
    uint64_t st = w[meta::kStatus];
    s["hts_up"] = status::hts_up(st);
    s["sls_up"] = status::sls_up(st);
    return s;
  }

 private:
  struct Limbo {
    GlobalAddress addr;
    uint32_t bytes;
    uint64_t at;  // when its unlinking was reported to us (transport clock)
  };

  Index(const Options& o, const Meta& m) : opts_(o), meta_(m) {}
  // The hint flush point `p` issues (none when a test switched the point off).
  FlushHint hint(FlushPoint p, FlushHint h) const {
    return flush_hint(opts_.faults.skip_flush, p, h);
  }

  static void validate(const Options& o) {
    validate_option_fields("hstore", o);  // each field's range (Options::fields())
    if (o.root_slot >= layout::kRootSlots) throw ConfigError("hstore: root_slot out of range");
    if (o.key_size == 0 || o.key_size > kMaxKeyBytes)
      throw ConfigError("hstore: key_size " + std::to_string(o.key_size) + " is not in 1.." +
                        std::to_string(kMaxKeyBytes));
  }

  static void write_big(Client<T>& c, GlobalAddress at, const void* src, uint64_t bytes) {
    constexpr uint64_t kChunk = 1 << 20;
    for (uint64_t off = 0; off < bytes; off += kChunk)
      c.write(at + off, static_cast<const std::byte*>(src) + off,
              static_cast<uint32_t>(std::min(kChunk, bytes - off)), FlushHint::kWriteBack);
  }

  // Writes the records of `keys` and places their slots in `img`; returns overflow buckets used.
  static uint64_t bulk_load(Client<T>& c, const Meta& m, std::span<const Key> keys,
                            const ValueFn& value_of, std::vector<uint64_t>& img) {
    uint64_t next_overflow = m.heads;
    std::vector<std::string> bufs;
    std::vector<Batch> batches;
    auto flush = [&] {
      if (!batches.empty()) c.run(std::span<Batch>(batches));
      batches.clear();
      bufs.clear();
    };
    bufs.reserve(256);
    const bool wide = m.wide();
    if (wide && m.key_size < kIntegerKeyBytes && !keys.empty())
      throw LimitError("hstore: bulk-loaded integer keys take 8 bytes; key_size is " +
                       std::to_string(m.key_size));
    for (size_t i = 0; i < keys.size(); ++i) {
      Key k = keys[i];
      std::string v = value_of ? value_of(k) : std::string(reinterpret_cast<const char*>(&k), 8);
      std::string& rec = bufs.emplace_back();
      const std::string kb = key_bytes(k);  // a byte-key index holds k as its 8 bytes
      Record::encode(kb, v, wide, rec);
      GlobalAddress a = c.alloc(Record::alloc_bytes(static_cast<uint32_t>(rec.size())));
      Batch* b = nullptr;
      for (auto& x : batches)
        if (x.node() == a.node() && x.size() < Batch::kMaxVerbs) b = &x;
      if (!b) b = &batches.emplace_back();
      b->write(a, rec.data(), static_cast<uint32_t>(rec.size())).hint(FlushHint::kWriteBack);
      KeyHash kh = KeyHash::of(kb, wide);
      uint64_t word = slot::make(kh.sig(), static_cast<uint32_t>(rec.size() / 8), a);
      // Place: first free slot of the chain, else a new overflow bucket.
      uint64_t idx = kh.head(m.heads);
      for (;;) {
        uint64_t* bk = img.data() + idx * 8;
        uint32_t s = 0;
        while (s < kSlotsPerBucket && bk[s] != 0) ++s;
        if (s < kSlotsPerBucket) {
          bk[s] = word;
          break;
        }
        if (bk[kNextWord] == 0) {
          if (next_overflow >= m.buckets())
            throw PoolExhausted("hstore: bulk load overflows the hash table (raise expected_keys)");
          bk[kNextWord] = next_overflow++;
        }
        idx = bk[kNextWord];
      }
      if (bufs.size() == 256) flush();
    }
    flush();
    return next_overflow - m.heads;
  }

  Options opts_;
  Meta meta_;
  mutable std::atomic<uint64_t> get_retries_{0}, degraded_gets_{0}, write_retries_{0},
      scan_retries_{0}, scan_reanchors_{0}, freed_{0};
  std::mutex limbo_mu_;
  std::deque<Limbo> limbo_;  // left over by handles that went away
  std::atomic<size_t> limbo_size_{0};

 public:
  // One client's operations. GET is one-sided; writes and SCAN are requests to the servers.
  class Handle {
   public:
    Handle(std::shared_ptr<Index> x, Client<T>& c) : x_(std::move(x)), c_(&c) {
      std::random_device rd;
      session_ =
          (uint64_t{rd()} << 32) ^ rd() ^ (uint64_t{c.id()} << 20) ^ uint64_t { c.home_node() };
      box_ = c.reply_mailbox();
      const Meta& m = x_->meta_;
      if ((c.home_node() == m.hts_node || c.home_node() == m.sls_node) &&
          box_ >= m.ack_base - m.logs)
        throw ConfigError("hstore: client " + std::to_string(c.id()) + " on node " +
                          std::to_string(c.home_node()) +
                          " would share a mailbox with an HStore server (use a smaller client id)");
      status_ = read_status(c, m, x_->hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
    }
    Handle(Handle&&) = default;
    Handle& operator=(Handle&&) = delete;
    ~Handle() {
      if (!x_ || limbo_.empty()) return;
      std::lock_guard<std::mutex> g(x_->limbo_mu_);
      for (auto& l : limbo_) x_->limbo_.push_back(l);
      x_->limbo_size_.store(x_->limbo_.size());
    }

    // GET (paper §4.2): READ the bucket (with the status word, same doorbell), then READ the
    // record: 2 round trips; a miss with no signature match is decided by the bucket alone.
    bool search(Key k, std::string& out) {
      char kb[8];
      put_key_bytes(k, kb);
      return get({kb, 8}, out);
    }
    bool search(KeyView k, std::string& out) { return get(checked(k), out); }

    bool insert(Key k, std::string_view v) { return write(Op::kInsert, int_key(k), v); }
    bool update(Key k, std::string_view v) { return write(Op::kUpdate, int_key(k), v); }
    bool remove(Key k) { return write(Op::kRemove, int_key(k), {}); }
    bool insert(KeyView k, std::string_view v) { return write(Op::kInsert, checked(k), v); }
    bool update(KeyView k, std::string_view v) { return write(Op::kUpdate, checked(k), v); }
    bool remove(KeyView k) { return write(Op::kRemove, checked(k), {}); }

    // SCAN (paper §4.2): one request to the SLS, which drains its log and answers (key, slot)
    // rows; then the records are READ, `scan_reads_per_trip` per round trip (paper: one each).
    // On an index with byte keys the integer scan starts at key_bytes(from) and returns only the
    // rows whose keys are 8 bytes long (the integer keys), up to `count` rows looked at.
    [[gnu::noinline]] void scan(Key from, size_t count,
                                std::vector<std::pair<Key, std::string>>& rows) {
      rows.clear();
      if (count == 0) return;
      char kb[8];
      put_key_bytes(from, kb);
      if (!scan_rows({kb, 8}, count)) return;
      for (size_t i = 0; i < got_.size(); ++i)
        if (got_[i].first.size() == kIntegerKeyBytes)
          rows.emplace_back(key_of_bytes(got_[i].first), std::string(row_value(i)));
    }
    [[gnu::noinline]] void scan(KeyView from, size_t count,
                                std::vector<std::pair<std::string, std::string>>& rows) {
      rows.clear();
      checked(from);
      if (count == 0) return;
      if (!scan_rows(from, count)) return;
      for (size_t i = 0; i < got_.size(); ++i)
        rows.emplace_back(std::move(got_[i].first), std::string(row_value(i)));
    }

    Client<T>& client() { return *c_; }
    size_t limbo_records() const { return limbo_.size(); }

   private:
    static constexpr uint32_t kMaxAttempts = 100000;
    static constexpr unsigned kClockPolls = 32;  // polls of a reply wait per look at the clock
    enum class Wait { kGot, kRetry };

    bool wide() const { return x_->meta_.wide(); }
    // A byte key this index takes: 1..key_size bytes (exactly 8 on an integer-key index).
    KeyView checked(KeyView k) const {
      const uint32_t ks = x_->meta_.key_size;
      if (wide() ? k.empty() || k.size() > ks : k.size() != kIntegerKeyBytes)
        throw LimitError("hstore: a key of " + std::to_string(k.size()) +
                         " bytes on an index of key_size " + std::to_string(ks) +
                         (wide() ? "" : " (8-byte keys only)"));
      return k;
    }
    // The integer key k as its 8 bytes (kept in the handle: writes keep the key view around).
    KeyView int_key(Key k) {
      put_key_bytes(k, ikey_);
      return checked({ikey_, 8});
    }
    std::string_view row_value(size_t i) const { return Record::value(bufs_[i].data(), wide()); }

    // GET (paper §4.2): READ the bucket (with the status word, same doorbell), then READ the
    // record: 2 round trips; a miss with no signature match is decided by the bucket alone.
    [[gnu::noinline]] bool get(KeyView k, std::string& out) {
      Index& x = *x_;
      const Meta& m = x.meta_;
      const bool wide = m.wide();
      const KeyHash kh = KeyHash::of(k, wide);
      // The bucket's slots whose signature matches: on the stack, and the record reads through
      // the handle's ReadRounds, so that a GET allocates nothing once the handle is warm.
      uint64_t cands[kSlotsPerBucket];
      size_t nc = 0;
      // The grace check below starts on the coarse clock where its tick is small against the
      // grace period (a precise read was a twentieth of a GET on shm). A coarse start is never
      // later than the precise one, so the elapsed time measured to a precise end is never short:
      // a lagging coarse clock can only make a GET redo, never accept a reused record.
      const bool coarse = c_->coarse_tick_ns() * 8 <= m.grace_ns;
      for (uint32_t attempt = 0;; ++attempt) {
        if (attempt) {
          x.get_retries_.fetch_add(1, std::memory_order_relaxed);
          if (attempt > kMaxAttempts)
            throw TransportError("hstore: GET of " + key_text(k, wide) + " never validated");
          c_->pause();
        }
        const uint64_t t0 = coarse ? c_->coarse_now_ns() : c_->now_ns();
        uint64_t idx = kh.head(m.heads);
        bool redo = false;
        for (uint64_t hop = 0; hop <= m.buckets() && !redo; ++hop) {
          std::array<uint64_t, 8> bk;
          uint64_t st = 0;
          Batch b;
          b.read(m.bucket(idx), bk.data(), kBucketBytes)
              .hint(x.hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate))
              .read(m.status_word(), &st, 8)
              .hint(x.hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
          c_->run(b);
          status_ = st;
          // Read after the bucket: if the table was lost or replaced, this says so.
          if (!status::hts_up(st)) return degraded_search(k, out);
          nc = 0;
          for (uint32_t s = 0; s < kSlotsPerBucket; ++s)
            if (slot::live(bk[s]) && slot::sig(bk[s]) == kh.sig()) cands[nc++] = bk[s];
          if (nc != 0) {
            if (bufs_.size() < nc) bufs_.resize(nc);
            ReadRounds& rr = get_reads_;
            rr.clear();
            for (size_t i = 0; i < nc; ++i) {
              bufs_[i].resize(slot::bytes(cands[i]));
              rr.read(slot::addr(cands[i]), bufs_[i].data(), slot::bytes(cands[i]),
                      x.hint(FlushPoint::kRecordInvalidate, FlushHint::kInvalidate));
            }
            rr.run(*c_, nc);
            for (size_t i = 0; i < nc; ++i) {
              auto cl = Record::classify(bufs_[i].data(), slot::bytes(cands[i]), k, wide);
              if (cl == Record::Check::kOtherKey) continue;
              // Too slow (the record might have been freed and reused meanwhile) or torn: redo.
              if (cl == Record::Check::kTorn || c_->now_ns() - t0 > m.grace_ns / 2) {
                redo = true;
                break;
              }
              out.assign(Record::value(bufs_[i].data(), wide));
              return true;
            }
          }
          if (redo) break;
          uint64_t nx = bk[kNextWord];
          if (nx == 0) return false;
          if (nx >= m.buckets()) redo = true;
          idx = nx;
        }
      }
    }

    // The (key, slot) rows of a SCAN into got_ and their records into bufs_ (the first `count`
    // keys >= from); false when there are none.
    [[gnu::noinline]] bool scan_rows(KeyView from, size_t count) {
      Index& x = *x_;
      const Meta& m = x.meta_;
      const bool wide = m.wide();
      const uint64_t start = c_->now_ns();
      std::vector<std::pair<std::string, uint64_t>>& got = got_;
      for (uint32_t attempt = 0;; ++attempt) {
        if (attempt) {
          x.scan_retries_.fetch_add(1, std::memory_order_relaxed);
          if (attempt > kMaxAttempts) throw TransportError("hstore: SCAN never validated");
        }
        uint64_t st = status_;
        if (!status::sls_up(st)) st = wait_for([](uint64_t s) { return status::sls_up(s); }, start);
        const uint32_t se = status::sls_epoch(st);
        const uint64_t t0 = c_->now_ns();
        req_.assign({key_word(from, wide), count});
        append_key(req_, from, wide);
        got.clear();
        bool bad = false;
        Wait wr = call(m.sls_node, m.sls_inbox, kScan, req_, false, se, start, t0,
                       [&](const std::vector<uint64_t>& w) {
                         size_t total = w[0] & 0xffffffffull;
                         size_t i = 1;
                         while (i + 1 < w.size()) {
                           const uint64_t kw = w[i], sw = w[i + 1];
                           i += 2;
                           if (!take_key(w, i, kw, m.key_size, key_)) {
                             bad = true;
                             break;
                           }
                           got.push_back({key_, sw});
                         }
                         return bad || got.size() >= total;
                       });
        if (bad) throw TransportError("hstore: malformed scan reply from the SLS");
        if (wr == Wait::kRetry) continue;
        bufs_.resize(got.size());
        ReadRounds rr;
        for (size_t i = 0; i < got.size(); ++i) {
          bufs_[i].resize(slot::bytes(got[i].second));
          rr.read(slot::addr(got[i].second), bufs_[i].data(), slot::bytes(got[i].second),
                  x.hint(FlushPoint::kRecordInvalidate, FlushHint::kInvalidate));
        }
        rr.run(*c_, x.opts_.scan_reads_per_trip);
        bool ok = true;
        for (size_t i = 0; ok && i < got.size(); ++i)
          ok = Record::classify(bufs_[i].data(), slot::bytes(got[i].second), got[i].first, wide) ==
               Record::Check::kMatch;
        if (!ok) continue;
        // The rows were current when the SLS read them, after t0: their records cannot have been
        // freed before t0 + grace. A scan slower than grace/2 (a long one on a slow network, or
        // behind a busy SLS) re-reads them against the table instead of starting over: its next
        // attempt would be as slow, and on Soft-RoCE under an emulated CPU, where 100 one-record
        // trips take seconds, no attempt ever was fast enough.
        if (c_->now_ns() - t0 > m.grace_ns / 2) {
          x.scan_reanchors_.fetch_add(1, std::memory_order_relaxed);
          if (!reread_linked(got)) continue;
        }
        return !got.empty();
      }
    }

    // Re-reads the records of `rows` as a GET does: READ the rows' buckets (with the status word)
    // at an anchor time, then their records while within grace/2 of it; a slot the table held at
    // the anchor cannot be freed before anchor + grace (its replacement comes after, and the
    // writer frees a grace later). A new anchor for the rows not reached in time. False when the
    // HTS is down or a row's slot is no longer in the table (replaced or removed): the caller
    // redoes the scan.
    bool reread_linked(const std::vector<std::pair<std::string, uint64_t>>& rows) {
      Index& x = *x_;
      const Meta& m = x.meta_;
      const bool wide = m.wide();
      std::vector<std::array<uint64_t, 8>>& bk = anchor_buckets_;
      bk.resize(rows.size());
      ReadRounds rr;
      for (size_t next = 0, rounds = 0; next < rows.size(); ++rounds) {
        if (rounds > kMaxAttempts) throw TransportError("hstore: SCAN never validated");
        const uint64_t anchor = c_->now_ns();
        uint64_t st = 0;
        for (size_t i = next; i < rows.size(); ++i)
          rr.read(m.bucket(KeyHash::of(rows[i].first, wide).head(m.heads)), bk[i].data(),
                  kBucketBytes, x.hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
        rr.read(m.status_word(), &st, 8,
                x.hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
        rr.run(*c_, rows.size() - next + 1);  // one round trip
        status_ = st;
        if (!status::hts_up(st)) return false;
        for (size_t i = next; i < rows.size(); ++i)
          if (!in_chain(bk[i], rows[i].second)) return false;
        const size_t per = std::max<size_t>(1, x.opts_.scan_reads_per_trip);
        while (next < rows.size()) {
          const size_t end = std::min(rows.size(), next + per);
          for (size_t i = next; i < end; ++i)
            rr.read(slot::addr(rows[i].second), bufs_[i].data(), slot::bytes(rows[i].second),
                    x.hint(FlushPoint::kRecordInvalidate, FlushHint::kInvalidate));
          rr.run(*c_, per);
          if (c_->now_ns() - anchor > m.grace_ns / 2) break;  // these rows: after a new anchor
          for (size_t i = next; i < end; ++i)
            if (Record::classify(bufs_[i].data(), slot::bytes(rows[i].second), rows[i].first,
                                 wide) != Record::Check::kMatch)
              return false;
          next = end;
        }
      }
      return true;
    }

    // Whether slot word `word` is in the bucket chain that starts with `head` (READ already);
    // overflow buckets are READ one trip each.
    bool in_chain(const std::array<uint64_t, 8>& head, uint64_t word) {
      const Meta& m = x_->meta_;
      std::array<uint64_t, 8> b = head;
      for (uint64_t hop = 0; hop <= m.buckets(); ++hop) {
        for (uint32_t s = 0; s < kSlotsPerBucket; ++s)
          if (b[s] == word) return true;
        const uint64_t nx = b[kNextWord];
        if (nx == 0 || nx >= m.buckets()) return false;
        c_->read(m.bucket(nx), b.data(), kBucketBytes,
                 x_->hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
      }
      return false;
    }

    // Point read while the HTS is down (paper §5.5): the SLS answers (key -> slot), then READ.
    bool degraded_search(KeyView k, std::string& out) {
      Index& x = *x_;
      const Meta& m = x.meta_;
      const bool wide = m.wide();
      const uint64_t start = c_->now_ns();
      for (uint32_t attempt = 0;; ++attempt) {
        if (attempt > kMaxAttempts)
          throw TransportError("hstore: degraded GET of " + key_text(k, wide) + " never answered");
        uint64_t st = status_;
        if (status::hts_up(st)) return get(k, out);
        if (!status::sls_up(st)) {
          wait_for([](uint64_t s) { return status::hts_up(s) || status::sls_up(s); }, start);
          continue;
        }
        x.degraded_gets_.fetch_add(1, std::memory_order_relaxed);
        const uint64_t t0 = c_->now_ns();
        uint64_t code = 0, word = 0;
        req_.assign(1, key_word(k, wide));
        append_key(req_, k, wide);
        Wait wr = call(m.sls_node, m.sls_inbox, kDget, req_, false, status::sls_epoch(st), start,
                       c_->now_ns(), [&](const std::vector<uint64_t>& w) {
                         code = w[0];
                         word = w.size() > 1 ? w[1] : 0;
                         return true;
                       });
        if (wr == Wait::kRetry) continue;
        if (code == kAbsent) return false;
        if (code == kFound && slot::live(word)) {
          std::string buf(slot::bytes(word), '\0');
          c_->read(slot::addr(word), buf.data(), slot::bytes(word),
                   x.hint(FlushPoint::kRecordInvalidate, FlushHint::kInvalidate));
          if (Record::classify(buf.data(), slot::bytes(word), k, wide) == Record::Check::kMatch &&
              c_->now_ns() - t0 <= m.grace_ns / 2) {
            out.assign(Record::value(buf.data(), wide));
            return true;
          }
          continue;
        }
        // The SLS no longer answers point reads (the HTS is back): look again.
        c_->pause();
        status_ =
            read_status(*c_, m, x_->hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
      }
    }

    // PUT/UPDATE/DELETE (paper §3.2, §4.2): store the record first (one WRITE), then one request
    // to the HTS, answered once the SLS has logged the update and the table holds it.
    [[gnu::noinline]] bool write(Op op, KeyView k, std::string_view v) {
      Index& x = *x_;
      const Meta& m = x.meta_;
      const bool wide = m.wide();
      // One clock read for reclamation, the op's deadline and its first wait (about 40 ns each on
      // the development VM, a few per write).
      const uint64_t start = c_->now_ns();
      reclaim(start);
      GlobalAddress rec;
      uint32_t units = 0, abytes = 0;
      if (op != Op::kRemove) {
        Record::encode(k, v, wide, wbuf_);
        units = static_cast<uint32_t>(wbuf_.size() / 8);
        abytes = Record::alloc_bytes(static_cast<uint32_t>(wbuf_.size()));
        rec = c_->alloc(abytes);
        c_->write(rec, wbuf_.data(), static_cast<uint32_t>(wbuf_.size()),
                  x.hint(FlushPoint::kRecordWriteBack, FlushHint::kWriteBack));
      }
      // Names this write across retries, so an HTS rebuilt after a failure can tell that it was
      // already logged at the SLS (notes A19).
      const uint64_t tag = session_ + (++seq_);
      for (uint32_t attempt = 0;; ++attempt) {
        if (attempt) {
          x.write_retries_.fetch_add(1, std::memory_order_relaxed);
          if (attempt > kMaxAttempts)
            throw TransportError("hstore: write of " + key_text(k, wide) + " never answered");
        }
        uint64_t st = status_;
        if (!status::hts_up(st)) st = wait_for([](uint64_t s) { return status::hts_up(s); }, start);
        const uint32_t he = status::hts_epoch(st);
        req_.assign({uint64_t(op) | (uint64_t{units} << 8) | (uint64_t{he} << 32),
                     key_word(k, wide), rec.raw(), tag});
        append_key(req_, k, wide);
        uint64_t code = 0, old = 0;
        Wait wr = call(m.hts_node, m.hts_inbox, kReq, req_, true, he, start,
                       attempt ? c_->now_ns() : start, [&](const std::vector<uint64_t>& w) {
                         code = w[0];
                         old = w.size() > 1 ? w[1] : 0;
                         return true;
                       });
        if (wr == Wait::kRetry) continue;
        switch (code) {
          case kOk:
            if (slot::live(old))
              limbo_.push_back(
                  {slot::addr(old), Record::alloc_bytes(slot::bytes(old)), c_->now_ns()});
            return true;
          case kNo:
            if (rec) c_->free(rec, abytes);  // never logged, never linked: free at once
            return false;
          case kFull:
            if (rec) c_->free(rec, abytes);
            throw PoolExhausted(
                "hstore: the hash table's overflow area is full (raise Options::expected_keys "
                "or overflow_fraction)");
          case kStale:
            status_ = read_status(*c_, m,
                                  x_->hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
            c_->pause();
            continue;
          default:
            throw TransportError("hstore: malformed reply code " + std::to_string(code) +
                                 " from the HTS");
        }
      }
    }

    // Sends a request and collects its reply message(s) (`take` returns true when complete).
    // kRetry when the server went down or was replaced meanwhile (checked every status_poll_ns).
    // `start`: when the operation began (its timeout); `now`: the time now (the status polls').
    template <class Take>
    Wait call(NodeId node, uint32_t box, uint32_t tag, std::span<const uint64_t> req, bool hts,
              uint32_t epoch, uint64_t start, uint64_t now, Take&& take) {
      const Options& o = x_->opts_;
      const uint64_t id = session_ ^ (uint64_t{1} << 63) ^ (++requests_ << 1);
      uint64_t last = now;
      bool changed = false;
      unsigned polls = 0;
      auto check = [&] {
        // Both deadlines are milliseconds, while a poll of the reply mailbox is tens of ns and a
        // clock read (vDSO on shm) as much again: the clock every kClockPolls polls is enough
        // (perf of YCSB A on shm: reading it on every poll was 11% of the process's samples).
        if (++polls % kClockPolls) return false;
        uint64_t now = c_->now_ns();
        if (now - start > o.op_timeout_ns)
          throw TransportError("hstore: no answer from the " + std::string(hts ? "HTS" : "SLS") +
                               " for " + std::to_string(o.op_timeout_ns / 1000000) + " ms");
        if (now - last < o.status_poll_ns) return false;
        last = now;
        status_ = read_status(*c_, x_->meta_,
                              x_->hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
        bool up = hts ? status::hts_up(status_) : status::sls_up(status_);
        uint32_t e = hts ? status::hts_epoch(status_) : status::sls_epoch(status_);
        changed = !up || e != epoch;
        return changed;
      };
      if (!post(*c_, node, box, tag, req, id, box_, check)) return Wait::kRetry;
      Message msg;
      std::vector<uint64_t> w;
      for (;;) {
        while (c_->try_receive(box_, msg)) {
          if (msg.request_id != id) continue;  // a late answer to an abandoned request
          if (!words_of(msg, w, 1))
            throw TransportError("hstore: malformed reply (tag " + std::to_string(msg.tag) + ")");
          if (take(w)) return Wait::kGot;
        }
        if (check()) return Wait::kRetry;
        c_->pause();
      }
    }

    // Polls the status word until `ok(status)`; returns it.
    template <class Ok>
    uint64_t wait_for(Ok&& ok, uint64_t start) {
      const Options& o = x_->opts_;
      for (;;) {
        status_ = read_status(*c_, x_->meta_,
                              x_->hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
        if (ok(status_)) return status_;
        uint64_t now = c_->now_ns();
        if (now - start > o.op_timeout_ns)
          throw TransportError("hstore: the index servers stayed down for " +
                               std::to_string(o.op_timeout_ns / 1000000) + " ms");
        // A server is down: look again soon (status_poll_ns may be long; it paces in-call checks).
        while (c_->now_ns() - now < std::min<uint64_t>(o.status_poll_ns, 200'000)) c_->pause();
      }
    }

    // Frees old records whose grace period has passed (ours, then any a departed handle left).
    void reclaim(uint64_t now) {
      Index& x = *x_;
      const uint64_t grace = x.meta_.grace_ns;
      while (!limbo_.empty() && now - limbo_.front().at >= grace) {
        c_->free(limbo_.front().addr, limbo_.front().bytes);
        limbo_.pop_front();
        x.freed_.fetch_add(1, std::memory_order_relaxed);
      }
      if (x.limbo_size_.load(std::memory_order_relaxed) == 0) return;
      std::lock_guard<std::mutex> g(x.limbo_mu_);
      while (!x.limbo_.empty() && now - x.limbo_.front().at >= grace) {
        c_->free(x.limbo_.front().addr, x.limbo_.front().bytes);
        x.limbo_.pop_front();
        x.freed_.fetch_add(1, std::memory_order_relaxed);
      }
      x.limbo_size_.store(x.limbo_.size());
    }

    std::shared_ptr<Index> x_;
    Client<T>* c_;
    uint64_t session_ = 0, seq_ = 0, requests_ = 0;
    uint32_t box_ = 0;
    uint64_t status_ = 0;  // last status word seen
    std::deque<Limbo> limbo_;
    std::string wbuf_;
    std::vector<std::string> bufs_;
    ReadRounds get_reads_;       // a GET's record reads (kept for its storage)
    std::vector<uint64_t> req_;  // the request being sent
    std::vector<std::pair<std::string, uint64_t>> got_;    // a scan's (key, slot) rows
    std::vector<std::array<uint64_t, 8>> anchor_buckets_;  // reread_linked's bucket reads
    std::string key_;
    char ikey_[8] = {};
  };
};

}  // namespace dmrt::hstore
