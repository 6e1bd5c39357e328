// HStore hash-table server (HTS, paper §3.2/§4.1-4.2): logs writes by key hash, ships them in
// batches to the SLS, applies them to the one-sided chained hash table once the SLS has logged
// them.
#pragma once

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
#include <vector>

#include "dmrt/indexes/common/faults.h"
#include "dmrt/indexes/hstore/detail/options.h"
#include "dmrt/indexes/hstore/detail/protocol.h"
#include "dmrt/indexes/hstore/detail/remote.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/service.h"
#include "dmrt/runtime/service_claim.h"

namespace dmrt::hstore {

// The service body of the HTS: run(ctx) on every fiber of a host homed on the HTS node, with
// fibers = 1 + logs. Fiber 0 is the RPC fiber (paper: RPC threads): it receives client requests
// and appends them to the log chosen by the key's hash, and handles the SLS handshake. Fiber 1+w
// is the worker of log w (paper: worker threads): it forms a batch from its log, ships it to the
// SLS, waits for the SLS's "logged" answer, applies the batch to the table and answers clients.
//
// Table words are changed by this server's CPU (paper: "compare-and-swap operation with the CPU"):
// compute nodes only READ the table, never touch it with one-sided atomics, so the service rule
// of dmrt/runtime/service.h allows it; the status word, which the manager CASes, is changed by
// verbs.
template <Transport T>
class HashTableServer {
 public:
  explicit HashTableServer(ServerOptions so = {}) : so_(so) {}

  // The entry point of every fiber of the host (prebuilt in libdmrt: dmrt/indexes/hstore/hstore.h).
  [[gnu::noinline]] void run(ServiceContext<T>& ctx) {
    if (ctx.fiber() == 0) {
      if (init(ctx)) rpc_loop(ctx);
      // A clean stop frees the claim at once; after a failure a later host waits for the lease.
      // (Not a guard: unwinding through a destructor on a fiber stack is what AddressSanitizer
      // cannot follow, dmrt/runtime/service.h.)
      if (claim_) claim_->release(ctx.client());
    } else {
      while (!ready_.load(std::memory_order_acquire)) {
        if (ctx.stop_requested()) return;
        ctx.client().pause();
      }
      if (ctx.fiber() - 1 < m_.logs) worker_loop(ctx, ctx.fiber() - 1);
    }
  }

 private:
  struct Request {
    Op op;
    uint32_t units;
    std::string key;  // its bytes (an integer key: 8 big-endian bytes)
    uint64_t addr;
    uint64_t tag;
    NodeId from;
    uint32_t reply_box;
    uint64_t request_id;
    uint64_t client() const { return (uint64_t{from} << 32) | reply_box; }
  };
  struct Dedup {
    uint64_t tag = 0, old = 0;
  };
  // One key's state as seen by the batch being formed: the table, plus this batch's earlier
  // entries.
  struct KeyState {
    std::string key;
    bool present;
    uint64_t word;
    std::byte* pos;  // its slot (present), else null
  };
  struct Outcome {
    Code code = kNo;
    uint64_t old = 0;     // slot word before (kOk)
    uint64_t word = 0;    // slot word after (kOk, set)
    uint64_t expect = 0;  // what the slot holds when this entry is applied
    std::byte* pos = nullptr;
    bool effect = false;
    EntryOp entry = EntryOp::kSet;
  };
  enum class Phase { kIdle, kFormed, kShipped };
  // A worker's scratch for forming a batch: kept between batches for its capacity, so that
  // deciding a request allocates nothing once warm (callgrind of YCSB A on shm: the vectors of
  // lookup and form were most of the server's malloc and free, docs/results.md issue 20).
  struct Scratch {
    std::vector<KeyState> seen;
    std::vector<std::pair<std::byte*, uint64_t>> cands;
    std::vector<uint64_t> heads;
    ReadRounds rr;
  };
  struct WorkBatch {
    std::vector<Request> reqs;
    std::vector<Outcome> outs;
    std::vector<uint64_t> words;  // the ship message
    uint64_t seq = 0;
    uint32_t shipped_epoch = 0;
    Phase phase = Phase::kIdle;
    Scratch scratch;
  };

  // --- start-up --------------------------------------------------------------------------------
  bool init(ServiceContext<T>& ctx) {
    Client<T>& c = ctx.client();
    while (!Meta::load(c, so_.root_slot, m_)) {
      if (ctx.stop_requested()) return false;
      idle(ctx);
    }
    if (ctx.node() != m_.hts_node)
      throw ConfigError("hstore: the HTS service runs on node " + std::to_string(ctx.node()) +
                        " but the table is on node " + std::to_string(m_.hts_node));
    if (so_.host_fibers && so_.host_fibers < 1 + m_.logs)
      throw ConfigError("hstore: the index has " + std::to_string(m_.logs) +
                        " update logs but the HTS host started " + std::to_string(so_.host_fibers) +
                        " fibers (it needs " + std::to_string(1 + m_.logs) + ")");
    // One HTS per index: a second host is refused while this one's heartbeat advances.
    claim_.emplace(m_.addr + 8ull * meta::kHtsOwner,
                   "hstore-hts of the index at root slot " + std::to_string(so_.root_slot));
    if (!claim_->acquire(c, [&] { return ctx.stop_requested(); })) return false;
    base_ = ctx.region();
    table_ = base_ + m_.table.offset();
    if (claim_->took_over()) stat(hts_stat::kTakeovers).fetch_add(1);
    parked_ = std::make_unique<std::atomic<uint64_t>[]>(m_.logs);
    for (unsigned w = 0; w < m_.logs; ++w) parked_[w].store(0);
    logs_.resize(m_.logs);
    log_mu_ = std::make_unique<std::mutex[]>(m_.logs);
    log_len_ = std::make_unique<std::atomic<size_t>[]>(m_.logs);
    uint64_t st = read_status(
        c, m_,
        flush_hint(so_.faults.skip_flush, FlushPoint::kServerInvalidate, FlushHint::kInvalidate));
    epoch_ = status::hts_epoch(st);
    if (so_.recover) {
      if (!recover(ctx)) return false;
    } else {
      // Until an SLS says hello there is nobody to ship to: workers hold.
      overflow_next_.store(m_.heads + stat(hts_stat::kOverflowUsed).load());
      hold_.store(true);
    }
    touch(ctx);
    ready_.store(true, std::memory_order_release);
    return true;
  }

  // Rebuild the table from the SLS (paper §3.2 "the hash table can be recovered from SLS by
  // scanning the skiplist"): no pool access, only the (key, slot) pairs the SLS streams.
  bool recover(ServiceContext<T>& ctx) {
    Client<T>& c = ctx.client();
    uint64_t t0 = c.now_ns();
    for (uint64_t i = 0; i < m_.buckets() * (kBucketBytes / 8); ++i)
      local::store_word(table_ + 8 * i, 0);
    overflow_next_.store(m_.heads);
    stat(hts_stat::kOverflowUsed).store(0);
    Message msg;
    for (unsigned w = 0; w < m_.logs; ++w)
      while (receive(c, m_.ack_box(w), msg)) {
      }
    while (receive(c, m_.hts_ctrl, msg)) {
    }
    uint64_t words[1] = {epoch_};
    if (!post(c, m_.sls_node, m_.sls_inbox, kDump, words, 0, m_.hts_ctrl,
              [&] { return ctx.stop_requested(); }))
      return false;
    uint64_t keys = 0, dedups = 0;
    std::vector<uint64_t> w;
    std::string key;
    std::vector<std::pair<std::string, uint64_t>> rows;
    for (;;) {
      if (!receive(c, m_.hts_ctrl, msg)) {
        if (ctx.stop_requested()) return false;
        c.pause();
        continue;
      }
      touch(ctx);  // busy: the idle workers of this thread must not put it to sleep
      if (!words_of(msg, w, 1)) continue;
      if (msg.tag == kDumpKeys) {
        uint64_t n = w[0];
        // [key] [slot] per key, then a byte key's words: the whole message is checked first.
        rows.clear();
        size_t pos = 1;
        for (uint64_t i = 0; i < n && pos + 2 <= w.size(); ++i) {
          const uint64_t kw = w[pos], sw = w[pos + 1];
          pos += 2;
          if (!take_key(w, pos, kw, m_.key_size, key)) break;
          rows.push_back({key, sw});
        }
        if (rows.size() != n) continue;
        for (const auto& [k, sw] : rows) {
          KeyHash kh = KeyHash::of(k, m_.wide());
          uint64_t word = (sw & ~(uint64_t{0xff} << 56)) | (uint64_t{kh.sig()} << 56);
          if (!claim(kh, word))
            throw PoolExhausted("hstore: rebuilding the hash table overflowed its overflow area");
          ++keys;
        }
        charge_cpu(c, so_.row_cpu_ns * n);
      } else if (msg.tag == kDumpDedup) {
        uint64_t n = w[0];
        if (w.size() < 1 + 3 * n) continue;
        for (uint64_t i = 0; i < n; ++i) dedup_[w[1 + 3 * i]] = {w[2 + 3 * i], w[3 + 3 * i]};
        dedups += n;
      } else if (msg.tag == kDumpEnd && w.size() >= 3) {
        if (w[1] != keys || w[2] != dedups)
          throw TransportError("hstore: HTS rebuild received " + std::to_string(keys) +
                               " keys and " + std::to_string(dedups) +
                               " dedup entries; the SLS sent " + std::to_string(w[1]) + " and " +
                               std::to_string(w[2]));
        sls_epoch_.store(static_cast<uint32_t>(w[0]));
        break;
      }
    }
    stat(hts_stat::kKeys).store(keys);
    hold_.store(false);
    uint32_t mine = epoch_;
    update_status(c, m_, [mine](uint64_t s) {
      if (status::hts_epoch(s) != mine) return s;  // replaced again meanwhile: stay down
      return s | status::kHtsUp;
    });
    stat(hts_stat::kRebuilds).fetch_add(1);
    stat(hts_stat::kRebuildNs).store(c.now_ns() - t0);
    stat(hts_stat::kRebuildKeys).store(keys);
    return true;
  }

  // --- fiber 0: requests and the SLS handshake ---------------------------------------------------
  void rpc_loop(ServiceContext<T>& ctx) {
    Client<T>& c = ctx.client();
    Message msg;
    std::vector<uint64_t> w;
    while (!ctx.stop_requested()) {
      claim_->beat(c);
      bool busy = false;
      for (int n = 0; n < 64 && receive(c, m_.hts_inbox, msg); ++n) {
        busy = true;
        handle(ctx, msg, w);
      }
      if (ready_for_) {
        bool all = true;
        uint64_t gen = hold_gen_.load();
        for (unsigned i = 0; i < m_.logs; ++i) all = all && parked_[i].load() == gen;
        if (all) {
          uint64_t e[1] = {*ready_for_};
          if (post(c, m_.sls_node, m_.sls_ctrl, kReady, e, 0, 0,
                   [&] { return ctx.stop_requested(); }))
            ready_for_.reset();
          busy = true;
        }
      }
      if (busy)
        touch(ctx);
      else
        idle(ctx);
    }
  }

  void handle(ServiceContext<T>& ctx, const Message& msg, std::vector<uint64_t>& w) {
    switch (msg.tag) {
      case kReq: {
        if (!words_of(msg, w, 4)) break;
        Request r{static_cast<Op>(w[0] & 0xff),
                  static_cast<uint32_t>((w[0] >> 8) & 0xff),
                  {},
                  w[2],
                  w[3],
                  msg.from_node,
                  msg.reply_mailbox,
                  msg.request_id};
        // [key] (byte keys: its length, the bytes after the four words)
        size_t pos = 4;
        if (!take_key(w, pos, w[1], m_.key_size, r.key) || pos != w.size()) break;
        stat(hts_stat::kRequests).fetch_add(1);
        if (static_cast<uint32_t>(w[0] >> 32) != epoch_) {
          stat(hts_stat::kStale).fetch_add(1);
          reply(ctx, r, kStale, 0);
          return;
        }
        if (r.op < Op::kInsert || r.op > Op::kRemove || (r.op != Op::kRemove && r.units < 2)) {
          stat(hts_stat::kMalformed).fetch_add(1);
          return;
        }
        // A client retrying across an HTS failure: its write was logged at the SLS before.
        if (auto it = dedup_.find(r.client()); it != dedup_.end() && it->second.tag == r.tag) {
          stat(hts_stat::kDedupHits).fetch_add(1);
          reply(ctx, r, kOk, it->second.old);
          return;
        }
        unsigned l = KeyHash::of(r.key, m_.wide()).log(m_.logs);
        std::lock_guard<std::mutex> g(log_mu_[l]);
        logs_[l].push_back(std::move(r));
        log_len_[l].store(logs_[l].size(), std::memory_order_relaxed);
        return;
      }
      case kHello:
        if (!words_of(msg, w, 1)) break;
        // A new SLS: hold every worker still (no apply), then let it read the table.
        sls_epoch_.store(static_cast<uint32_t>(w[0]));
        hold_.store(true);
        hold_gen_.fetch_add(1);
        ready_for_ = static_cast<uint32_t>(w[0]);
        return;
      case kRebuilt:
        if (!words_of(msg, w, 1)) break;
        if (static_cast<uint32_t>(w[0]) == sls_epoch_.load()) hold_.store(false);
        return;
      default:
        break;
    }
    stat(hts_stat::kMalformed).fetch_add(1);
  }

  void reply(ServiceContext<T>& ctx, const Request& r, Code code, uint64_t old) {
    uint64_t w[2] = {code, old};
    post(ctx.client(), r.from, r.reply_box, kReply, w, r.request_id, 0,
         [&] { return ctx.stop_requested(); });
  }

  // --- workers: one per log ---------------------------------------------------------------------
  void worker_loop(ServiceContext<T>& ctx, unsigned wi) {
    Client<T>& c = ctx.client();
    WorkBatch b;
    Message msg;
    std::vector<uint64_t> w;
    while (!ctx.stop_requested()) {
      if (hold_.load()) {
        parked_[wi].store(hold_gen_.load());
        idle(ctx);
        continue;
      }
      switch (b.phase) {
        case Phase::kIdle: {
          b.reqs.clear();
          // An idle worker looks at its log's length, not its lock (taken on every poll, the
          // locks of the four idle workers were 4% of a YCSB A run's samples on shm).
          if (log_len_[wi].load(std::memory_order_relaxed) != 0) {
            std::lock_guard<std::mutex> g(log_mu_[wi]);
            auto& q = logs_[wi];
            while (!q.empty() && b.reqs.size() < m_.ship_batch) {
              b.reqs.push_back(std::move(q.front()));
              q.pop_front();
            }
            log_len_[wi].store(q.size(), std::memory_order_relaxed);
          }
          if (b.reqs.empty()) {
            idle(ctx);
            break;
          }
          touch(ctx);
          if (!form(ctx, b)) return;
          bool effect = false;
          for (auto& o : b.outs) effect = effect || o.effect;
          if (!effect) {
            finish(ctx, b, false);
            break;
          }
          b.seq = ++batch_seq_;
          b.phase = Phase::kFormed;
          break;
        }
        case Phase::kFormed: {
          uint32_t se = sls_epoch_.load();
          b.words[0] = uint64_t{epoch_} | (uint64_t{se} << 32);
          b.words[2] = b.seq;
          if (post(c, m_.sls_node, m_.sls_inbox, kShip, b.words, b.seq, m_.ack_box(wi), [&] {
                return ctx.stop_requested() || hold_.load() || sls_epoch_.load() != se;
              })) {
            b.shipped_epoch = se;
            b.phase = Phase::kShipped;
            stat(hts_stat::kBatches).fetch_add(1);
            stat(hts_stat::kShipped).fetch_add(b.words[1] >> 32);
          }
          touch(ctx);
          break;
        }
        case Phase::kShipped: {
          bool acked = false;
          while (receive(c, m_.ack_box(wi), msg)) {
            if (!words_of(msg, w, 2)) continue;
            uint32_t se = static_cast<uint32_t>(w[0]);
            if (se == b.shipped_epoch && se == sls_epoch_.load() && w[1] == b.seq) {
              acked = true;
              break;
            }
          }
          if (acked && !hold_.load()) {
            touch(ctx);
            finish(ctx, b, true);
          } else if (b.shipped_epoch != sls_epoch_.load()) {
            b.phase = Phase::kFormed;  // the SLS was replaced: ship the batch again
          } else {
            idle(ctx);
          }
          break;
        }
      }
    }
  }

  // Decides every request's outcome against the table plus the batch's earlier entries (all
  // updates of a key go through this worker, so nothing else changes this key meanwhile), reserves
  // slots for inserts, and builds the ship message. False when stopping.
  bool form(ServiceContext<T>& ctx, WorkBatch& b) {
    b.outs.assign(b.reqs.size(), Outcome{});
    b.words.assign(kShipHeaderWords, 0);
    std::vector<KeyState>& seen = b.scratch.seen;
    seen.clear();
    unsigned count = 0;
    for (size_t i = 0; i < b.reqs.size(); ++i) {
      const Request& r = b.reqs[i];
      Outcome& o = b.outs[i];
      KeyHash kh = KeyHash::of(r.key, m_.wide());
      KeyState* st = nullptr;
      for (auto& s : seen)
        if (s.key == r.key) st = &s;
      if (!st) {
        KeyState s{r.key, false, 0, nullptr};
        if (!lookup(ctx, r.key, kh, s, b.scratch)) return false;
        seen.push_back(s);
        st = &seen.back();
      }
      uint64_t neww =
          r.op == Op::kRemove ? 0 : slot::make(kh.sig(), r.units, GlobalAddress::from_raw(r.addr));
      switch (r.op) {
        case Op::kInsert:
          if (st->present) break;
          st->pos = reserve(kh);
          if (!st->pos) {
            o.code = kFull;
            break;
          }
          o = {kOk, 0, neww, slot::kReserved, st->pos, true, EntryOp::kSet};
          st->present = true;
          st->word = neww;
          break;
        case Op::kUpdate:
          if (!st->present) break;
          o = {kOk, st->word, neww, st->word, st->pos, true, EntryOp::kSet};
          st->word = neww;
          break;
        case Op::kRemove:
          if (!st->present) break;
          o = {kOk, st->word, 0, st->word, st->pos, true, EntryOp::kDel};
          st->present = false;
          st->word = 0;
          st->pos = nullptr;
          break;
      }
      if (!o.effect) continue;
      ++count;
      b.words.push_back(uint64_t(o.entry) | (uint64_t{r.from} << 8) |
                        (uint64_t{r.reply_box} << 32));
      b.words.push_back(key_word(r.key, m_.wide()));
      b.words.push_back(o.word);
      b.words.push_back(o.old);
      b.words.push_back(r.tag);
      append_key(b.words, r.key, m_.wide());
    }
    b.words[1] = uint64_t{0} | (uint64_t{count} << 32);
    charge_cpu(ctx.client(), so_.request_cpu_ns * b.reqs.size());
    return true;
  }

  // Finds `k` in its chain: signature matches are confirmed by reading the record's key from the
  // pool (the table holds no keys, notes A8). A read slower than grace/2 is redone (the record of
  // another key may have been freed meanwhile). False when stopping.
  bool lookup(ServiceContext<T>& ctx, KeyView k, const KeyHash& kh, KeyState& out, Scratch& sc) {
    Client<T>& c = ctx.client();
    const uint64_t limit = m_.grace_ns / 2;
    for (;;) {
      if (ctx.stop_requested()) return false;
      uint64_t t0 = c.now_ns();
      std::vector<std::pair<std::byte*, uint64_t>>& cands = sc.cands;
      cands.clear();
      uint64_t idx = kh.head(m_.heads);
      for (uint64_t hops = 0; hops <= m_.buckets(); ++hops) {
        std::byte* bk = table_ + uint64_t{kBucketBytes} * idx;
        for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
          uint64_t wv = local::load_word(bk + 8 * s);
          if (slot::live(wv) && slot::sig(wv) == kh.sig()) cands.push_back({bk + 8 * s, wv});
        }
        idx = local::load_word(bk + 8 * kNextWord);
        if (idx == 0) break;
      }
      out.present = false;
      if (cands.empty()) return true;
      // The header and (byte keys) as many key bytes as k has: enough to tell k from any other.
      const bool wide = m_.wide();
      const uint32_t stride = Record::head_bytes(Record::kMaxBytes, k.size(), wide) / 8;
      std::vector<uint64_t>& heads = sc.heads;
      heads.assign(cands.size() * stride, 0);
      ReadRounds& rr = sc.rr;
      rr.clear();
      for (size_t i = 0; i < cands.size(); ++i)
        rr.read(slot::addr(cands[i].second), heads.data() + i * stride,
                Record::head_bytes(slot::bytes(cands[i].second), k.size(), wide),
                flush_hint(so_.faults.skip_flush, FlushPoint::kServerInvalidate,
                           FlushHint::kInvalidate));
      rr.run(c, cands.size());
      if (c.now_ns() - t0 > limit) continue;
      for (size_t i = 0; i < cands.size(); ++i) {
        const uint32_t rb = slot::bytes(cands[i].second);
        // Our key's slot cannot change under us (only this worker writes it), so a match stands.
        if (Record::header_is(reinterpret_cast<const char*>(heads.data() + i * stride), rb,
                              Record::head_bytes(rb, k.size(), wide), k, wide) &&
            local::load_word(cands[i].first) == cands[i].second) {
          out.present = true;
          out.word = cands[i].second;
          out.pos = cands[i].first;
          return true;
        }
      }
      return true;
    }
  }

  // Reserves a slot in k's chain (CAS 0 -> reserved), linking a new overflow bucket when the
  // chain is full; null when the overflow area is exhausted.
  std::byte* reserve(const KeyHash& kh) { return claim(kh, slot::kReserved); }

  std::byte* claim(const KeyHash& kh, uint64_t value) {
    uint64_t idx = kh.head(m_.heads);
    for (;;) {
      std::byte* bk = table_ + uint64_t{kBucketBytes} * idx;
      for (uint32_t s = 0; s < kSlotsPerBucket; ++s)
        if (local::load_word(bk + 8 * s) == 0 && local::cas(bk + 8 * s, 0, value) == 0)
          return bk + 8 * s;
      uint64_t nx = local::load_word(bk + 8 * kNextWord);
      if (nx != 0) {
        idx = nx;
        continue;
      }
      uint64_t fresh = overflow_next_.fetch_add(1);
      if (fresh >= m_.buckets()) return nullptr;
      std::byte* nb = table_ + uint64_t{kBucketBytes} * fresh;
      local::store_word(nb, value);  // fully initialised before it is linked
      if (local::cas(bk + 8 * kNextWord, 0, fresh) == 0) {
        stat(hts_stat::kOverflowUsed).fetch_add(1);
        return nb;
      }
      local::store_word(nb, 0);  // someone linked first (multi-threaded host): walk on
    }
  }

  // Applies an acknowledged batch (or none, for a batch of no-ops) and answers its clients.
  void finish(ServiceContext<T>& ctx, WorkBatch& b, bool apply) {
    bool early = injected(so_.faults.reply_before_apply);
    if (early) {
      for (size_t i = 0; i < b.reqs.size(); ++i)
        reply(ctx, b.reqs[i], b.outs[i].code, b.outs[i].old);
      // Hold the window open long enough (transport time) for a client on another thread to
      // read the old value, even on a loaded machine.
      const uint64_t until = ctx.client().now_ns() + 200'000;
      while (ctx.client().now_ns() < until) ctx.client().pause();
    }
    if (apply) {
      size_t effects = 0, stall_at = ~size_t{0};
      if (injected(so_.faults.stall_mid_batch != nullptr)) {
        for (auto& o : b.outs) effects += o.effect;
        if (effects >= 2 && !so_.faults.stall_mid_batch->exchange(true)) stall_at = effects / 2;
      }
      size_t applied = 0;
      for (auto& o : b.outs) {
        if (!o.effect) continue;
        if (applied++ == stall_at) {  // killed here: the rest is neither applied nor answered
          while (!ctx.stop_requested()) ctx.client().pause();
          return;
        }
        uint64_t seen = local::cas(o.pos, o.expect, o.word);
        if (seen != o.expect)
          throw TransportError("hstore: HTS slot changed under its owning log worker (found " +
                               std::to_string(seen) + ", expected " + std::to_string(o.expect) +
                               ")");
        stat(hts_stat::kApplied).fetch_add(1);
        if (o.entry == EntryOp::kDel)
          stat(hts_stat::kKeys).fetch_sub(1);
        else if (o.expect == slot::kReserved)
          stat(hts_stat::kKeys).fetch_add(1);
      }
    }
    for (auto& o : b.outs)
      if (!o.effect) stat(hts_stat::kNoops).fetch_add(1);
    if (!early)
      for (size_t i = 0; i < b.reqs.size(); ++i)
        reply(ctx, b.reqs[i], b.outs[i].code, b.outs[i].old);
    b.phase = Phase::kIdle;
  }

  // --- helpers ----------------------------------------------------------------------------------
  // From this server's own mailboxes: a malformed slot is counted and skipped.
  bool receive(Client<T>& c, uint32_t box, Message& out) {
    return receive_or_skip(c, box, out, [&] { stat(hts_stat::kMalformed).fetch_add(1); });
  }
  std::atomic_ref<uint64_t> stat(uint32_t i) {
    return local::word(base_ + m_.addr.offset() + 8ull * (meta::kHtsStats + i));
  }
  std::atomic<uint64_t>& busy() { return so_.shared_busy ? *so_.shared_busy : last_busy_; }
  // Only idle() reads it, and only when the host sleeps idle servers itself.
  void touch(ServiceContext<T>& ctx) {
    if (so_.idle_sleep_us) busy().store(ctx.client().now_ns(), std::memory_order_relaxed);
  }
  // Lets the other fibers run; sleeps the thread only when the whole server has been idle a while.
  void idle(ServiceContext<T>& ctx) {
    Client<T>& c = ctx.client();
    c.pause();
    if (so_.idle_sleep_us &&
        c.now_ns() - busy().load(std::memory_order_relaxed) > so_.idle_after_us * 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(so_.idle_sleep_us));
  }

  ServerOptions so_;
  Meta m_;
  std::byte* base_ = nullptr;
  std::byte* table_ = nullptr;
  std::atomic<bool> ready_{false};
  uint32_t epoch_ = 0;
  std::atomic<uint32_t> sls_epoch_{0};
  std::atomic<bool> hold_{true};
  std::atomic<uint64_t> hold_gen_{1};
  std::unique_ptr<std::atomic<uint64_t>[]> parked_;
  std::optional<uint32_t> ready_for_;     // fiber 0 only
  std::optional<ServiceClaim<T>> claim_;  // fiber 0 only
  std::atomic<uint64_t> overflow_next_{0};
  std::atomic<uint64_t> batch_seq_{0};
  std::atomic<uint64_t> last_busy_{0};
  std::vector<std::deque<Request>> logs_;
  std::unique_ptr<std::mutex[]> log_mu_;
  std::unique_ptr<std::atomic<size_t>[]> log_len_;  // each log's length, set under its lock
  std::unordered_map<uint64_t, Dedup> dedup_;       // from the SLS at rebuild; fiber 0 reads it
};

// The service body for any transport's ServiceHost, homed on the server's node with
// Index::hts_fibers() fibers; the host's fibers share one server state, which goes away with the
// host.
template <Transport T>
ServiceBody<T> hts_service(ServerOptions so = {}) {
  auto srv = std::make_shared<HashTableServer<T>>(so);
  return [srv](ServiceContext<T>& ctx) { srv->run(ctx); };
}

}  // namespace dmrt::hstore
