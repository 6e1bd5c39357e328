// HStore skiplist server (SLS, paper §3.2/§4.1-4.2): logs shipped updates and acks them, applies
// them to hash-partitioned skiplists asynchronously, serves SCAN (after draining the log) and
// rebuilds.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dmrt/indexes/common/faults.h"
#include "dmrt/indexes/hstore/detail/options.h"
#include "dmrt/indexes/hstore/detail/protocol.h"
#include "dmrt/indexes/hstore/detail/remote.h"
#include "dmrt/indexes/hstore/detail/skiplist.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/service.h"
#include "dmrt/runtime/service_claim.h"

namespace dmrt::hstore {

// The service body of the SLS: run(ctx) on every fiber of a host homed on the SLS node, with
// fibers = 1 + partitions + query_fibers. Fiber 0 receives (paper: RPC threads): it appends each
// shipped entry to its partition's log and acks the HTS at once; fibers 1..P apply the logs to the
// partitions' skiplists (paper: workers, asynchronously); the query fibers serve SCAN, degraded GET
// and the dump that rebuilds a lost hash table. The skiplists are private to this server (heap
// memory, never read one-sided), so losing the server loses them: a new SLS always starts by
// rebuilding from the hash table (paper §3.2: addresses from the HTS, full keys from the pool).
template <Transport T>
class SkipListServer {
 public:
  explicit SkipListServer(ServerOptions so = {}) : so_(so) {}
  // The hint of the server's READs (FlushPoint::kServerInvalidate, unless a test removed it).
  FlushHint server_read_hint() const {
    return flush_hint(so_.faults.skip_flush, FlushPoint::kServerInvalidate, FlushHint::kInvalidate);
  }

  // The entry point of every fiber of the host (prebuilt in libdmrt: dmrt/indexes/hstore/hstore.h).
  [[gnu::noinline]] void run(ServiceContext<T>& ctx) {
    if (ctx.fiber() == 0) {
      if (init(ctx)) rpc_loop(ctx);
      // A clean stop frees the claim at once; after a failure a later host waits for the lease.
      // (Not a guard: unwinding through a destructor on a fiber stack is what AddressSanitizer
      // cannot follow, dmrt/runtime/service.h.)
      if (claim_) claim_->release(ctx.client());
      return;
    }
    while (!ready_.load(std::memory_order_acquire)) {
      if (ctx.stop_requested()) return;
      ctx.client().pause();
    }
    unsigned f = ctx.fiber() - 1;
    if (f < m_.partitions)
      applier_loop(ctx, f);
    else if (f - m_.partitions < m_.query_fibers)
      query_loop(ctx);
  }

 private:
  struct Entry {
    EntryOp op;
    std::string key;  // its bytes (an integer key: 8 big-endian bytes)
    uint64_t word;
    uint64_t at;  // when it was logged (transport clock)
  };
  // One partition: its skiplist and the unapplied tail of its log (paper: entries with
  // isApplied = false; applied entries are truncated, notes A12).
  struct Partition {
    std::mutex mu;
    SkipList list;
    std::deque<Entry> log;
    std::atomic<size_t> pending{0};  // log.size(), set under mu: an idle applier skips the lock
  };
  struct Dedup {
    uint64_t tag = 0, old = 0;
  };

  // --- start-up: rebuild from the hash table
  // ------------------------------------------------------
  bool init(ServiceContext<T>& ctx) {
    Client<T>& c = ctx.client();
    while (!Meta::load(c, so_.root_slot, m_)) {
      if (ctx.stop_requested()) return false;
      idle(ctx);
    }
    if (ctx.node() != m_.sls_node)
      throw ConfigError("hstore: the SLS service runs on node " + std::to_string(ctx.node()) +
                        " but the index places it on node " + std::to_string(m_.sls_node));
    if (so_.host_fibers && so_.host_fibers < 1 + m_.partitions + m_.query_fibers)
      throw ConfigError("hstore: the index has " + std::to_string(m_.partitions) +
                        " partitions and " + std::to_string(m_.query_fibers) +
                        " query fibers but the SLS host started " +
                        std::to_string(so_.host_fibers) + " fibers (it needs " +
                        std::to_string(1 + m_.partitions + m_.query_fibers) + ")");
    // One SLS per index: a second host is refused while this one's heartbeat advances.
    claim_.emplace(m_.addr + 8ull * meta::kSlsOwner,
                   "hstore-sls of the index at root slot " + std::to_string(so_.root_slot));
    if (!claim_->acquire(c, [&] { return ctx.stop_requested(); })) return false;
    stats_ = ctx.region() + m_.sls_stats.offset();
    if (claim_->took_over()) stat(sls_stat::kTakeovers).fetch_add(1);
    parts_ = std::make_unique<Partition[]>(m_.partitions);
    for (unsigned p = 0; p < m_.partitions; ++p) parts_[p].list.set_key_size(m_.key_size);
    uint64_t st = read_status(c, m_, server_read_hint());
    epoch_ = status::sls_epoch(st);
    hts_epoch_.store(status::hts_epoch(st));
    dget_ok_.store(!status::hts_up(st));
    if (!rebuild(ctx)) return false;
    touch(ctx);
    ready_.store(true, std::memory_order_release);
    return true;
  }

  bool rebuild(ServiceContext<T>& ctx) {
    Client<T>& c = ctx.client();
    auto stopping = [&] { return ctx.stop_requested(); };
    uint64_t t0 = c.now_ns();
    Message msg;
    while (receive(c, m_.sls_ctrl, msg)) {
    }
    // Ask the HTS to hold its table still (no applies) and wait until it has.
    uint64_t hello[1] = {epoch_};
    if (!post(c, m_.hts_node, m_.hts_inbox, kHello, hello, 0, m_.sls_ctrl, stopping)) return false;
    std::vector<uint64_t> w;
    for (;;) {
      if (receive(c, m_.sls_ctrl, msg)) {
        if (msg.tag == kReady && words_of(msg, w, 1) && w[0] == epoch_) break;
        continue;
      }
      if (stopping()) return false;
      idle(ctx);
    }
    touch(ctx);
    // Every slot of the table (heads and overflow area), in large reads.
    const uint64_t total = m_.buckets() * kBucketBytes;
    std::vector<uint64_t> tbl(total / 8);
    constexpr uint64_t kChunk = 256 << 10;
    ReadRounds rr;
    for (uint64_t off = 0; off < total; off += kChunk)
      rr.read(m_.table + off, reinterpret_cast<std::byte*>(tbl.data()) + off,
              static_cast<uint32_t>(std::min(kChunk, total - off)), server_read_hint());
    rr.run(c, 8);
    std::vector<uint64_t> live;
    for (uint64_t b = 0; b < m_.buckets(); ++b)
      for (uint32_t s = 0; s < kSlotsPerBucket; ++s)
        if (slot::live(tbl[b * 8 + s])) live.push_back(tbl[b * 8 + s]);
    tbl.clear();
    tbl.shrink_to_fit();
    // The full key of every record, from the pool (header reads, many per round trip: 16 bytes
    // for an integer key, the header and the key's bytes for a byte key).
    const bool wide = m_.wide();
    const uint32_t stride = Record::head_bytes(Record::kMaxBytes, m_.key_size, wide);
    std::vector<uint64_t> heads(live.size() * (stride / 8));
    for (size_t i = 0; i < live.size(); ++i)
      rr.read(slot::addr(live[i]), heads.data() + i * (stride / 8),
              Record::head_bytes(slot::bytes(live[i]), m_.key_size, wide), server_read_hint());
    rr.run(c, 512);
    std::vector<std::vector<std::pair<std::string, uint64_t>>> rows(m_.partitions);
    std::string k;
    for (size_t i = 0; i < live.size(); ++i) {
      const uint32_t b = slot::bytes(live[i]);
      if (!Record::header_key(reinterpret_cast<const char*>(heads.data() + i * (stride / 8)), b,
                              Record::head_bytes(b, m_.key_size, wide), wide, k))
        throw TransportError("hstore: SLS rebuild found a slot whose record " +
                             slot::addr(live[i]).to_string() + " is not a record");
      rows[KeyHash::of(k, wide).log(m_.partitions)].push_back({k, live[i]});
    }
    uint64_t keys = 0;
    for (unsigned p = 0; p < m_.partitions; ++p) {
      auto& r = rows[p];
      std::sort(r.begin(), r.end());
      for (size_t i = 1; i < r.size(); ++i)
        if (r[i].first == r[i - 1].first)
          throw TransportError("hstore: SLS rebuild found key " + key_text(r[i].first, wide) +
                               " twice in the table");
      std::lock_guard<std::mutex> g(parts_[p].mu);
      parts_[p].list.build_sorted(r);
      keys += r.size();
    }
    stat(sls_stat::kKeys).store(keys);
    // Sorting and linking every key: the CPU part of the paper's "recovering a skiplist".
    charge_cpu(c, (so_.row_cpu_ns + so_.skiplist_cpu_ns / 4) * keys);
    touch(ctx);
    uint64_t done[1] = {epoch_};
    if (!post(c, m_.hts_node, m_.hts_inbox, kRebuilt, done, 0, 0, stopping)) return false;
    uint32_t mine = epoch_;
    update_status(c, m_, [mine](uint64_t s) {
      return status::sls_epoch(s) == mine ? s | status::kSlsUp : s;
    });
    stat(sls_stat::kRebuilds).fetch_add(1);
    stat(sls_stat::kRebuildNs).store(c.now_ns() - t0);
    stat(sls_stat::kRebuildKeys).store(keys);
    return true;
  }

  // --- fiber 0: log shipped entries and ack; queue queries
  // -------------------------------------------
  void rpc_loop(ServiceContext<T>& ctx) {
    Client<T>& c = ctx.client();
    Message msg;
    std::vector<uint64_t> w;
    while (!ctx.stop_requested()) {
      claim_->beat(c);
      bool busy = false;
      for (int n = 0; n < 64 && receive(c, m_.sls_inbox, msg); ++n) {
        busy = true;
        handle(ctx, msg, w);
      }
      if (busy)
        touch(ctx);
      else
        idle(ctx);
    }
  }

  void handle(ServiceContext<T>& ctx, Message& msg, std::vector<uint64_t>& w) {
    Client<T>& c = ctx.client();
    switch (msg.tag) {
      case kShip: {
        if (!words_of(msg, w, kShipHeaderWords)) break;
        const bool wide = m_.wide();
        uint64_t n = w[1] >> 32;
        // Where each entry starts (byte keys make entries variable-length).
        std::vector<size_t>& at = ship_at_;
        at.clear();
        size_t pos = kShipHeaderWords;
        for (uint64_t i = 0; i < n && pos + kShipEntryWords <= w.size(); ++i) {
          at.push_back(pos);
          pos += kShipEntryWords;
          uint64_t len = w[pos - kShipEntryWords + 1];
          if (wide && (len == 0 || len > m_.key_size)) break;
          pos += key_words(len, wide);
        }
        if (at.size() != n || pos != w.size()) break;
        if (static_cast<uint32_t>(w[0]) != hts_epoch_.load() ||
            static_cast<uint32_t>(w[0] >> 32) != epoch_) {
          stat(sls_stat::kStaleShips)
              .fetch_add(1);  // from a dead HTS or for a dead SLS: nobody waits
          return;
        }
        dget_ok_.store(false);  // the HTS is live again: point reads go to its table
        const uint64_t now = m_.apply_lag_ns ? c.now_ns() : 0;  // only the lag reads `at`
        std::vector<uint8_t>& touched = ship_touched_;
        touched.assign(m_.partitions, 0);
        {
          std::lock_guard<std::mutex> g(dedup_mu_);
          for (uint64_t i = 0; i < n; ++i) {
            const uint64_t* e = &w[at[i]];
            uint64_t client = (((e[0] >> 8) & 0xffff) << 32) | (e[0] >> 32);
            dedup_[client] = {e[4], e[3]};
          }
        }
        std::string key;
        for (uint64_t i = 0; i < n; ++i) {
          const uint64_t* e = &w[at[i]];
          size_t kp = at[i] + kShipEntryWords;
          take_key(w, kp, e[1], m_.key_size, key);
          unsigned p = KeyHash::of(key, wide).log(m_.partitions);
          std::lock_guard<std::mutex> g(parts_[p].mu);
          parts_[p].log.push_back({static_cast<EntryOp>(e[0] & 0xff), key, e[2], now});
          parts_[p].pending.store(parts_[p].log.size(), std::memory_order_relaxed);
          touched[p] = 1;
        }
        stat(sls_stat::kLogged).fetch_add(n);
        charge_cpu(c, so_.row_cpu_ns * n);
        if (m_.sync()) {  // HStore (sync): the skiplist is updated before the HTS hears back
          size_t applied = 0;
          for (unsigned p = 0; p < m_.partitions; ++p)
            if (touched[p]) applied += drain(p, sls_stat::kAppliedByDrain);
          charge_cpu(c, so_.skiplist_cpu_ns * applied);
        }
        uint64_t ack[2] = {epoch_, w[2]};
        post(c, msg.from_node, msg.reply_mailbox, kAck, ack, msg.request_id, 0,
             [&] { return ctx.stop_requested(); });
        return;
      }
      case kScan:
      case kDget: {
        std::lock_guard<std::mutex> g(q_mu_);
        queries_.push_back(std::move(msg));
        queries_len_.store(queries_.size(), std::memory_order_relaxed);
        return;
      }
      case kDump:
        if (!words_of(msg, w, 1)) break;
        hts_epoch_.store(static_cast<uint32_t>(w[0]));
        {
          std::lock_guard<std::mutex> g(q_mu_);
          queries_.push_back(std::move(msg));
          queries_len_.store(queries_.size(), std::memory_order_relaxed);
        }
        return;
      case kHtsDown:
        if (!words_of(msg, w, 1)) break;
        // The manager says the HTS is gone: its ships are dropped from now on, so this skiplist
        // (after its log) is the whole truth and may answer point reads.
        hts_epoch_.store(static_cast<uint32_t>(w[0]));
        dget_ok_.store(true);
        if (msg.reply_mailbox)
          post(c, msg.from_node, msg.reply_mailbox, kHtsDown,
               std::span<const uint64_t>(w.data(), 1), msg.request_id, 0,
               [&] { return ctx.stop_requested(); });
        return;
      default:
        break;
    }
    stat(sls_stat::kMalformed).fetch_add(1);
  }

  // --- appliers: the asynchronous skiplist update (paper §4.2)
  // ---------------------------------------
  void applier_loop(ServiceContext<T>& ctx, unsigned p) {
    Client<T>& c = ctx.client();
    while (!ctx.stop_requested()) {
      const uint64_t now = m_.apply_lag_ns ? c.now_ns() : 0;
      size_t n = 0;
      if (parts_[p].pending.load(std::memory_order_relaxed) != 0) {
        std::lock_guard<std::mutex> g(parts_[p].mu);
        auto& log = parts_[p].log;
        while (!log.empty() && n < 256) {
          if (m_.apply_lag_ns && now - log.front().at < m_.apply_lag_ns) break;
          apply(parts_[p], log.front());
          log.pop_front();
          ++n;
        }
        parts_[p].pending.store(log.size(), std::memory_order_relaxed);
      }
      if (n) {
        charge_cpu(c, so_.skiplist_cpu_ns * n);
        stat(sls_stat::kAppliedAsync).fetch_add(n);
        touch(ctx);
      } else {
        idle(ctx);
      }
    }
  }

  void apply(Partition& part, const Entry& e) {
    if (e.op == EntryOp::kSet) {
      if (part.list.upsert(e.key, e.word)) stat(sls_stat::kKeys).fetch_add(1);
    } else if (part.list.erase(e.key)) {
      stat(sls_stat::kKeys).fetch_sub(1);
    }
  }
  // Applies partition p's whole log (the caller must not hold its lock).
  size_t drain(unsigned p, uint32_t counter) {
    std::lock_guard<std::mutex> g(parts_[p].mu);
    return drain_locked(parts_[p], counter);
  }
  // Returns how many entries it applied.
  size_t drain_locked(Partition& part, uint32_t counter) {
    size_t n = part.log.size();
    for (const Entry& e : part.log) apply(part, e);
    part.log.clear();
    part.pending.store(0, std::memory_order_relaxed);
    if (n) stat(counter).fetch_add(n);
    return n;
  }

  // --- queries
  // ------------------------------------------------------------------------------------
  void query_loop(ServiceContext<T>& ctx) {
    std::vector<uint64_t> w;
    std::string key;
    while (!ctx.stop_requested()) {
      Message msg;
      bool got = false;
      if (queries_len_.load(std::memory_order_relaxed) != 0) {
        std::lock_guard<std::mutex> g(q_mu_);
        if (!queries_.empty()) {
          msg = std::move(queries_.front());
          queries_.pop_front();
          got = true;
        }
        queries_len_.store(queries_.size(), std::memory_order_relaxed);
      }
      if (!got) {
        idle(ctx);
        continue;
      }
      touch(ctx);
      size_t pos = 0;
      if (msg.tag == kScan && words_of(msg, w, 2) && take_key(w, pos = 2, w[0], m_.key_size, key))
        scan(ctx, msg, key, w[1]);
      else if (msg.tag == kDget && words_of(msg, w, 1) &&
               take_key(w, pos = 1, w[0], m_.key_size, key))
        dget(ctx, msg, key);
      else if (msg.tag == kDump)
        dump(ctx, msg);
      else
        stat(sls_stat::kMalformed).fetch_add(1);
    }
  }

  // Drains every partition's log first (paper: "if there are index updates left, the worker threads
  // will first apply the updates to the skiplist and then answer the SCAN request"), so every write
  // the HTS acknowledged before this request arrived is in the answer; then merges the partitions.
  void scan(ServiceContext<T>& ctx, const Message& msg, KeyView from, uint64_t count) {
    const bool wide = m_.wide();
    std::vector<std::pair<std::string, uint64_t>> rows;
    bool skip = injected(so_.faults.scan_skips_drain);
    size_t applied = 0;
    for (unsigned p = 0; p < m_.partitions; ++p) {
      std::lock_guard<std::mutex> g(parts_[p].mu);
      if (!skip) applied += drain_locked(parts_[p], sls_stat::kAppliedByDrain);
      uint64_t n = 0;
      for (auto* x = parts_[p].list.lower_bound(from); x && n < count; x = SkipList::next(x), ++n)
        rows.push_back({x->key(), x->value});
    }
    charge_cpu(ctx.client(),
               so_.skiplist_cpu_ns * (applied + m_.partitions) + so_.row_cpu_ns * rows.size());
    std::sort(rows.begin(), rows.end());
    if (rows.size() > count) rows.resize(count);
    stat(sls_stat::kScans).fetch_add(1);
    // As many rows per reply as fit one message (a row: [key] [slot], then a byte key's words).
    const size_t mw = max_words(ctx.client().endpoint().mailbox_geometry());
    std::vector<uint64_t> out;
    size_t part = 0;
    for (size_t i = 0; i == 0 || i < rows.size(); ++part) {
      out.assign(1, rows.size() | (uint64_t{part} << 32));
      for (; i < rows.size() && out.size() + 2 + key_words(rows[i].first.size(), wide) <= mw; ++i) {
        out.push_back(key_word(rows[i].first, wide));
        out.push_back(rows[i].second);
        append_key(out, rows[i].first, wide);
      }
      if (!post(ctx.client(), msg.from_node, msg.reply_mailbox, kScanPart, out, msg.request_id, 0,
                [&] { return ctx.stop_requested(); }))
        return;
      if (rows.empty()) break;
    }
  }

  // Point read while the HTS is down (paper §5.5: GETs are served from the skiplist).
  void dget(ServiceContext<T>& ctx, const Message& msg, KeyView k) {
    uint64_t out[2] = {kRetry, 0};
    if (dget_ok_.load()) {
      unsigned p = KeyHash::of(k, m_.wide()).log(m_.partitions);
      std::lock_guard<std::mutex> g(parts_[p].mu);
      size_t applied = drain_locked(parts_[p], sls_stat::kAppliedByDrain);
      charge_cpu(ctx.client(), so_.skiplist_cpu_ns * (applied + 1));
      uint64_t v;
      if (parts_[p].list.find(k, v))
        out[0] = kFound, out[1] = v;
      else
        out[0] = kAbsent;
      stat(sls_stat::kDgets).fetch_add(1);
    } else {
      stat(sls_stat::kDgetRetries).fetch_add(1);
    }
    post(ctx.client(), msg.from_node, msg.reply_mailbox, kDgetReply, out, msg.request_id, 0,
         [&] { return ctx.stop_requested(); });
  }

  // Streams every (key, slot) and the dedup table to a rebuilding HTS (its control mailbox).
  void dump(ServiceContext<T>& ctx, const Message& msg) {
    Client<T>& c = ctx.client();
    auto stopping = [&] { return ctx.stop_requested(); };
    const bool wide = m_.wide();
    std::vector<std::pair<std::string, uint64_t>> rows;
    for (unsigned p = 0; p < m_.partitions; ++p) {
      std::lock_guard<std::mutex> g(parts_[p].mu);
      drain_locked(parts_[p], sls_stat::kAppliedByDrain);
      for (auto* x = parts_[p].list.first(); x; x = SkipList::next(x))
        rows.push_back({x->key(), x->value});
    }
    charge_cpu(c, so_.row_cpu_ns * rows.size());
    std::vector<std::array<uint64_t, 3>> dd;
    {
      std::lock_guard<std::mutex> g(dedup_mu_);
      for (auto& [client, d] : dedup_) dd.push_back({client, d.tag, d.old});
    }
    const size_t mw = max_words(c.endpoint().mailbox_geometry());
    std::vector<uint64_t> out;
    const size_t per_dd = (mw - 1) / 3;
    for (size_t i = 0; i < rows.size();) {
      // As many keys as fit one message: [key] [slot], then a byte key's words.
      out.assign(1, 0);
      for (; i < rows.size() && out.size() + 2 + key_words(rows[i].first.size(), wide) <= mw;
           ++i, ++out[0]) {
        out.push_back(key_word(rows[i].first, wide));
        out.push_back(rows[i].second);
        append_key(out, rows[i].first, wide);
      }
      if (!post(c, msg.from_node, msg.reply_mailbox, kDumpKeys, out, 0, 0, stopping)) return;
      touch(ctx);  // busy: the idle fibers of this thread must not put it to sleep
    }
    for (size_t i = 0; i < dd.size(); i += per_dd) {
      size_t n = std::min(per_dd, dd.size() - i);
      out.assign(1, n);
      for (size_t j = i; j < i + n; ++j) out.insert(out.end(), dd[j].begin(), dd[j].end());
      if (!post(c, msg.from_node, msg.reply_mailbox, kDumpDedup, out, 0, 0, stopping)) return;
    }
    uint64_t end[3] = {epoch_, rows.size(), dd.size()};
    post(c, msg.from_node, msg.reply_mailbox, kDumpEnd, end, 0, 0, stopping);
    stat(sls_stat::kDumps).fetch_add(1);
  }

  // --- helpers ----------------------------------------------------------------------------------
  // From this server's own mailboxes: a malformed slot is counted and skipped.
  bool receive(Client<T>& c, uint32_t box, Message& out) {
    return receive_or_skip(c, box, out, [&] { stat(sls_stat::kMalformed).fetch_add(1); });
  }
  std::atomic_ref<uint64_t> stat(uint32_t i) { return local::word(stats_ + 8ull * i); }
  std::atomic<uint64_t>& busy() { return so_.shared_busy ? *so_.shared_busy : last_busy_; }
  // Only idle() reads it, and only when the host sleeps idle servers itself.
  void touch(ServiceContext<T>& ctx) {
    if (so_.idle_sleep_us) busy().store(ctx.client().now_ns(), std::memory_order_relaxed);
  }
  void idle(ServiceContext<T>& ctx) {
    Client<T>& c = ctx.client();
    c.pause();
    if (so_.idle_sleep_us &&
        c.now_ns() - busy().load(std::memory_order_relaxed) > so_.idle_after_us * 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(so_.idle_sleep_us));
  }

  ServerOptions so_;
  Meta m_;
  std::byte* stats_ = nullptr;
  std::atomic<bool> ready_{false};
  std::optional<ServiceClaim<T>> claim_;  // fiber 0 only
  uint32_t epoch_ = 0;
  std::atomic<uint32_t> hts_epoch_{0};  // ships accepted only from this HTS incarnation
  std::atomic<bool> dget_ok_{false};    // point reads answered (HTS down, no new ship yet)
  std::unique_ptr<Partition[]> parts_;
  std::mutex dedup_mu_;
  std::unordered_map<uint64_t, Dedup> dedup_;  // per client: last logged request and its old slot
  std::mutex q_mu_;
  std::deque<Message> queries_;
  std::atomic<size_t> queries_len_{0};  // queries_.size(), set under q_mu_
  std::atomic<uint64_t> last_busy_{0};
  std::vector<size_t> ship_at_;        // fiber 0: where a ship's entries start
  std::vector<uint8_t> ship_touched_;  // fiber 0: the partitions a ship logged to
};

// The service body for any transport's ServiceHost, homed on the server's node with
// Index::sls_fibers() fibers; the host's fibers share one server state, which goes away with the
// host.
template <Transport T>
ServiceBody<T> sls_service(ServerOptions so = {}) {
  auto srv = std::make_shared<SkipListServer<T>>(so);
  return [srv](ServiceContext<T>& ctx) { srv->run(ctx); };
}

}  // namespace dmrt::hstore
