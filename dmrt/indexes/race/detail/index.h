// RACE hashing (Zuo et al., ATC'21): the index over any transport, and its per-client handle.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "dmrt/indexes/race/detail/directory.h"
#include "dmrt/indexes/race/detail/layout.h"
#include "dmrt/indexes/race/detail/options.h"
#include "dmrt/indexes/race/detail/resize.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::race {

// One occupied slot as found by RaceIndex::items(): for tests and checkers (duplicates, loss).
struct Item {
  uint64_t key = 0;     // the integer key (byte keys: key_of_bytes of an 8-byte key, else 0)
  std::string key_str;  // the key as bytes (an integer key k: key_bytes(k))
  std::string value;
  GlobalAddress table;
  uint32_t bucket = 0, slot = 0;
};

template <Transport T>
class RaceIndex {
 public:
  using Options = race::Options;
  class Handle;

  // Builds the directory and the first 2^initial_global_depth subtables on the memory nodes and
  // publishes the directory address in the root slot (last, so attachers see a whole index).
  [[gnu::noinline]] static std::shared_ptr<RaceIndex> create(Client<T>& c, const Options& o) {
    auto idx = std::shared_ptr<RaceIndex>(new RaceIndex(c, o));
    uint32_t gd = idx->opts_.initial_global_depth;
    GlobalAddress dir = c.alloc_on(idx->opts_.home, Dir::bytes(idx->opts_.max_global_depth), 64);
    std::vector<uint64_t> entries(size_t{1} << gd);
    for (uint32_t i = 0; i < entries.size(); ++i) {
      // Setup's WRITEs are written back whatever the flush points (sim times none of them).
      GlobalAddress t =
          Splitter<T>::create_subtable(c, idx->geo_, gd, i, false, {}, FlushHint::kWriteBack);
      entries[i] = Dir::make_entry(t, gd);
    }
    constexpr FlushHint kWb = FlushHint::kWriteBack;
    c.write(Dir::entry_addr(dir, 0), entries.data(), static_cast<uint32_t>(8 * entries.size()),
            kWb);
    uint64_t head[4] = {gd, 0, entries.size(), idx->config_word()};
    c.write(dir, head, sizeof head, kWb);
    uint64_t raw = dir.raw();
    c.write(layout::root_slot(idx->opts_.home, idx->opts_.root_slot), &raw, 8, kWb);
    idx->dir_ = dir;
    return idx;
  }

  // Attaches to an index another client created, knowing only the options.
  [[gnu::noinline]] static std::shared_ptr<RaceIndex> attach(Client<T>& c, const Options& o) {
    auto idx = std::shared_ptr<RaceIndex>(new RaceIndex(c, o));
    // Published by create() on another host, perhaps: always seen from memory.
    uint64_t raw = c.template read_value<uint64_t>(
        layout::root_slot(idx->opts_.home, idx->opts_.root_slot), FlushHint::kInvalidate);
    if (raw == 0)
      throw ConfigError("no RACE index at root slot " + std::to_string(idx->opts_.root_slot) +
                        " of node " + std::to_string(idx->opts_.home) + " (create it first)");
    idx->dir_ = GlobalAddress::from_raw(raw);
    uint64_t cfg =
        c.template read_value<uint64_t>(idx->dir_ + Dir::kConfigOffset, FlushHint::kInvalidate);
    if (cfg != idx->config_word())
      throw ConfigError("RACE index at root slot " + std::to_string(idx->opts_.root_slot) +
                        " was created with other groups_per_subtable/max_global_depth/key mode "
                        "(key_size 8 or not), or by a build with another KV block checksum");
    return idx;
  }

  Handle handle(Client<T>& c) { return Handle(c, *this); }

  // Reads the whole directory and every subtable: load_factor (occupied / all slots), resizes,
  // global_depth, subtables, items.
  [[gnu::noinline]] IndexStats stats(Client<T>& c) {
    uint64_t head[3];
    c.read(dir_, head, sizeof head);
    uint64_t slots = 0, used = 0;
    for_each_table(c, [&](GlobalAddress, const std::vector<uint64_t>& img) {
      for (uint32_t b = 0; b < geo_.buckets(); ++b)
        for (uint32_t k = 0; k < kSlotsPerBucket; ++k) {
          ++slots;
          used += !Slot::empty(img[(kSubtableMetaBytes + b * kBucketBytes) / 8 + 1 + k]);
        }
    });
    IndexStats s;
    s["load_factor"] = slots ? static_cast<double>(used) / static_cast<double>(slots) : 0.0;
    s["resizes"] = static_cast<double>(head[1]);
    s["global_depth"] = static_cast<double>(Dir::gd(head[0]));
    s["subtables"] = static_cast<double>(head[2]);
    s["items"] = static_cast<double>(used);
    s["slots"] = static_cast<double>(slots);
    // What the splits this object's handles ran cost (attempts that lost a race included).
    s["resize_round_trips"] = static_cast<double>(resize_cost_->round_trips.load());
    s["resize_bytes"] =
        static_cast<double>(resize_cost_->bytes_read.load() + resize_cost_->bytes_written.load());
    // Splits and directory locks of processes that died, finished by survivors, and claims
    // (insert reservations) cancelled after a process died (issue 39).
    s["locks_taken_over"] = static_cast<double>(resize_cost_->takeovers.load());
    s["claims_cancelled"] = static_cast<double>(resize_cost_->claims_cancelled.load());
    return s;
  }

  // Every occupied slot with its key and value (reads every KV block): quiescent use only.
  std::vector<Item> items(Client<T>& c) {
    std::vector<Item> out;
    for_each_table(c, [&](GlobalAddress t, const std::vector<uint64_t>& img) {
      for (uint32_t b = 0; b < geo_.buckets(); ++b)
        for (uint32_t k = 0; k < kSlotsPerBucket; ++k) {
          uint64_t w = img[(kSubtableMetaBytes + b * kBucketBytes) / 8 + 1 + k];
          if (Slot::empty(w)) continue;
          std::string blk(Slot::bytes(w), '\0');
          c.read(Slot::block(w), blk.data(), Slot::bytes(w));
          std::string_view key = KvBlock::key_of(blk.data());
          Item it;
          if (opts_.key_size == kIntegerKeyBytes) {  // 8 native bytes
            std::memcpy(&it.key, key.data(), 8);
            it.key_str = key_bytes(it.key);
          } else {
            it.key_str = key;
            if (key.size() == 8) it.key = key_of_bytes(key);
          }
          it.value = KvBlock::value_of(blk.data());
          it.table = t;
          it.bucket = b;
          it.slot = k;
          out.push_back(std::move(it));
        }
    });
    return out;
  }

  const Options& options() const { return opts_; }
  const Geometry& geometry() const { return geo_; }
  GlobalAddress directory() const { return dir_; }

 private:
  RaceIndex(Client<T>& c, const Options& o) : opts_(o) {
    if (opts_.home == kFirstMemoryNode) opts_.home = c.memory_nodes().at(0);
    // Ranges from Options::fields(): groups_per_subtable >= 2 (a key's two locations lie in two
    // groups), max_global_depth <= 20 (the directory is reserved up front).
    validate_option_fields("race", opts_);
    if (opts_.key_size == 0 || opts_.key_size > kMaxKeyBytes)
      throw ConfigError("RACE key_size " + std::to_string(opts_.key_size) + " is not in 1.." +
                        std::to_string(kMaxKeyBytes));
    if (uint64_t{opts_.key_size} + opts_.value_size > KvBlock::kMaxPayload)
      throw ConfigError("RACE key_size + value_size (" + std::to_string(opts_.key_size) + " + " +
                        std::to_string(opts_.value_size) + ") exceeds a KV block's " +
                        std::to_string(KvBlock::kMaxPayload) + " bytes");
    geo_.groups = opts_.groups_per_subtable;
    if (opts_.expected_keys) {
      uint64_t per_table = uint64_t{geo_.buckets()} * kSlotsPerBucket * 8 / 10;
      while (opts_.initial_global_depth < opts_.max_global_depth &&
             (per_table << opts_.initial_global_depth) < opts_.expected_keys)
        ++opts_.initial_global_depth;
    }
    if (opts_.initial_global_depth > opts_.max_global_depth)
      throw ConfigError("RACE initial_global_depth exceeds max_global_depth");
  }
  // Byte keys and integer keys hash differently: a client of the other mode must not attach.
  // Bit 30: KV block checksums over lengths + key + value (2026-11-27); a build that checksums
  // the padding too would find every block torn and retry for ever, so it must not attach.
  uint64_t config_word() const {
    uint64_t byte_keys = opts_.key_size != kIntegerKeyBytes ? uint64_t{1} << 31 : 0;
    return 0x5241434500000000ull ^ (uint64_t{opts_.max_global_depth} << 32) ^ geo_.groups ^
           byte_keys ^ (uint64_t{1} << 30);
  }
  template <class F>
  void for_each_table(Client<T>& c, F f) {
    uint32_t gd = Dir::gd(c.template read_value<uint64_t>(dir_));
    std::vector<uint64_t> e(size_t{1} << gd);
    c.read(Dir::entry_addr(dir_, 0), e.data(), static_cast<uint32_t>(8 * e.size()));
    std::vector<GlobalAddress> tables;
    for (uint64_t x : e) tables.push_back(Dir::table(x));
    std::sort(tables.begin(), tables.end());
    tables.erase(std::unique(tables.begin(), tables.end()), tables.end());
    std::vector<uint64_t> img(geo_.bytes() / 8);
    for (GlobalAddress t : tables) {
      c.read(t, img.data(), static_cast<uint32_t>(geo_.bytes()));
      f(t, img);
    }
  }

  Options opts_;
  Geometry geo_;
  GlobalAddress dir_;
  // What subtable splits cost the handles of this object (their verbs are also counted in the
  // insert that split): shared with the handles, which may outlive it.
  std::shared_ptr<ResizeCost> resize_cost_ = std::make_shared<ResizeCost>();
};

// Per client (per fiber): owns the directory cache. Satisfies dmrt::KvHandle and
// dmrt::BytesKvHandle. Every operation runs on the key's bytes (KeyView): an integer key of a
// key_size 8 index is its 8 native bytes, as before byte keys; on any other key_size, k is
// key_bytes(k).
template <Transport T>
class RaceIndex<T>::Handle {
 public:
  Handle(Client<T>& c, const RaceIndex& idx)
      : c_(&c),
        opts_(idx.opts_),
        byte_keys_(idx.opts_.key_size != kIntegerKeyBytes),
        geo_(idx.geo_),
        cache_(idx.dir_, idx.opts_.directory_cache,
               hint(FlushPoint::kDirectoryInvalidate, FlushHint::kInvalidate)),
        resize_cost_(idx.resize_cost_) {
    cache_.refresh(c);
  }

  bool search(Key key, std::string& out) {
    IntKey k(*this, key);
    return search_key(k.view(), out);
  }
  bool insert(Key key, std::string_view value) {
    IntKey k(*this, key);
    return insert_key(k.view(), value);
  }
  bool update(Key key, std::string_view value) {
    IntKey k(*this, key);
    return update_key(k.view(), value);
  }
  bool remove(Key key) {
    IntKey k(*this, key);
    return remove_key(k.view());
  }
  bool search(KeyView key, std::string& out) {
    BytesKey k(*this, key);
    return search_key(k.view(), out);
  }
  bool insert(KeyView key, std::string_view value) {
    BytesKey k(*this, key);
    return insert_key(k.view(), value);
  }
  bool update(KeyView key, std::string_view value) {
    BytesKey k(*this, key);
    return update_key(k.view(), value);
  }
  bool remove(KeyView key) {
    BytesKey k(*this, key);
    return remove_key(k.view());
  }

  size_t cache_bytes() const { return cache_.bytes(); }
  uint64_t directory_refreshes() const { return cache_.refreshes(); }
  uint32_t cached_global_depth() const { return cache_.global_depth(); }

 private:
  // The stored form of an integer key: 8 native bytes (key_size 8), else key_bytes(k).
  class IntKey {
   public:
    IntKey(const Handle& h, Key k) {
      if (h.byte_keys_) {
        if (h.opts_.key_size < kIntegerKeyBytes) h.reject(kIntegerKeyBytes);
        put_key_bytes(k, buf_);
      } else {
        std::memcpy(buf_, &k, 8);
      }
    }
    KeyView view() const { return {buf_, 8}; }

   private:
    char buf_[8];
  };
  // The stored form of a byte key: itself (1..key_size bytes), or on a key_size 8 index the
  // native bytes of the integer key it spells (8 bytes only).
  class BytesKey {
   public:
    BytesKey(const Handle& h, KeyView k) : view_(k) {
      if (h.byte_keys_) {
        if (k.empty() || k.size() > h.opts_.key_size) h.reject(k.size());
      } else {
        if (k.size() != kIntegerKeyBytes) h.reject(k.size());
        Key v = key_of_bytes(k);
        std::memcpy(buf_, &v, 8);
        view_ = {buf_, 8};
      }
    }
    KeyView view() const { return view_; }

   private:
    KeyView view_;
    char buf_[8];
  };
  [[noreturn]] void reject(size_t len) const {
    throw LimitError(
        "RACE key of " + std::to_string(len) + " bytes: this index takes keys of " +
        (byte_keys_ ? "1 to " + std::to_string(opts_.key_size) : std::string("exactly 8")) +
        " bytes (Options::key_size " + std::to_string(opts_.key_size) + "); nothing was stored");
  }

  // 2 round trips on a hit: both combined buckets (one batch), then the candidate KV blocks.
  // A miss with no fingerprint match ends after the first (shm: +1 to confirm it, miss_stands).
  [[gnu::noinline]] bool search_key(KeyView key, std::string& out) {
    KeyHash kh = hash(key);
    for (;;) {
      View v;
      if (!read_view(kh, v, nullptr, headers_in_view())) continue;
      if (v.pending) {
        if (search_pending(kh, key, v, out)) return true;
        return false;
      }
      Cands cs = candidates(kh, v);
      if (cs.n == 0) {
        if (!miss_stands(v, cs)) continue;
        return false;
      }
      Found f = read_blocks(key, cs);
      if (f.torn) continue;
      if (f.idx < 0) {
        if (!miss_stands(v, cs)) continue;  // a block we read was re-used, or a split ran
        return false;
      }
      out.assign(KvBlock::value_of(block(cs, f.idx)));
      return true;
    }
  }

  // Insert-if-absent, 3 round trips: buckets + KV block write; tentative slot CAS + re-read of
  // both combined buckets (one batch); the CAS that makes the slot final. See settle_insert.
  [[gnu::noinline]] bool insert_key(KeyView key, std::string_view value) {
    KeyHash kh = hash(key);
    uint64_t word = 0;
    GlobalAddress blk = prepare_block(kh, key, value, word);
    const uint64_t claim = word | Slot::kTentative;
    bool written = false;
    for (;;) {
      View v;
      if (!read_view(kh, v, written ? nullptr : &blk)) {
        written = true;
        continue;
      }
      written = true;
      if (v.pending) {
        await_split(v);
        continue;
      }
      // Tentative claims count too: while another insert of this key is settling, claiming a
      // slot of our own would make it wait for our withdrawal, and a stream of such claims from
      // many clients would keep it waiting for ever. So wait for its verdict instead.
      Cands cs = candidates(kh, v, /*with_tentative=*/true);
      if (cs.n) {
        Found f = read_blocks(key, cs);
        if (f.torn) continue;
        bool final_copy = false, claimed = false;
        for (size_t i = 0; i < cs.n; ++i)
          if (f.matches >> i & 1) (Slot::tentative(cs.words[i]) ? claimed : final_copy) = true;
        if (final_copy) {
          c_->free(blk, Slot::bytes(word));  // never published
          return false;
        }
        if (claimed) {
          await_claims(v.table, cs, f.matches);
          continue;
        }
      }
      Pos p;
      if (!pick_slot(kh, v, p)) {
        uint64_t h = v.w[0][0];
        const VerbCounters before = c_->counters().total;
        const bool split = splitter().split(v.table, Header::ld(h), Header::suffix(h));
        resize_cost_->add(c_->counters().total - before);
        if (!split) c_->pause();
        cache_.refresh(*c_);
        continue;
      }
#ifdef DMRT_FAULT_INJECTION
      if (opts_.faults.skip_duplicate_resolution) {
        // The paper's protocol without the re-read: the slot goes final at once.
        if (c_->cas(slot_addr(v.table, p), 0, word) != 0) continue;
        return true;
      }
#endif
      View r;
      uint64_t old = 0;
      {
        Batch b;
        b.cas(slot_addr(v.table, p), 0, claim, &old);
        add_view_reads(b, kh, v.table, r);
        c_->run(b);
      }
      if (old != 0) continue;  // another client took the slot first
#ifdef DMRT_FAULT_INJECTION
      if (opts_.faults.insert_dies_after_claim) throw ClaimerDied{};
#endif
      int res = settle_insert(kh, key, v.table, p, claim, r);
      if (res == 1) return true;
      if (res == 0) {
        c_->free(blk, Slot::bytes(word));
        return false;
      }
      // Our claim was withdrawn (a split moved the key, or an earlier claim of the key is
      // pending): insert again; the block is ours still.
      cache_.refresh(*c_);
      c_->pause();
    }
  }

  // 3 round trips: buckets + new KV block write; candidate KV blocks; slot CAS.
  [[gnu::noinline]] bool update_key(KeyView key, std::string_view value) {
    KeyHash kh = hash(key);
    uint64_t word = 0;
    GlobalAddress blk = prepare_block(kh, key, value, word);
    bool written = false;
    for (;;) {
      View v;
      bool ok = read_view(kh, v, written ? nullptr : &blk, headers_in_view());
      written = true;
      if (!ok) continue;
      if (v.pending) {
        await_split(v);
        continue;
      }
      Cands cs = candidates(kh, v);
      Found f = cs.n ? read_blocks(key, cs) : Found{};
      if (f.torn) continue;
      if (f.idx < 0 && !miss_stands(v, cs)) continue;
      if (f.idx < 0) {
        c_->free(blk, Slot::bytes(word));
        return false;
      }
      uint64_t old = cs.words[f.idx];
      if (c_->cas(slot_addr(v.table, cs.pos[f.idx]), old, word) != old) continue;
      c_->free(Slot::block(old), Slot::bytes(old));
      return true;
    }
  }

  // 3 round trips: a search, then the slot CAS to empty.
  [[gnu::noinline]] bool remove_key(KeyView key) {
    KeyHash kh = hash(key);
    for (;;) {
      View v;
      if (!read_view(kh, v, nullptr, headers_in_view())) continue;
      if (v.pending) {
        await_split(v);
        continue;
      }
      Cands cs = candidates(kh, v);
      if (cs.n == 0) {
        if (!miss_stands(v, cs)) continue;
        return false;
      }
      Found f = read_blocks(key, cs);
      if (f.torn) continue;
      if (f.idx < 0) {
        if (!miss_stands(v, cs)) continue;
        return false;
      }
#ifdef DMRT_FAULT_INJECTION
      if (opts_.faults.delete_skips_cas) return true;
#endif
      uint64_t old = cs.words[f.idx];
      if (c_->cas(slot_addr(v.table, cs.pos[f.idx]), old, 0) != old) continue;
      c_->free(Slot::block(old), Slot::bytes(old));
      return true;
    }
  }

  // Position of a slot among the key's four buckets: combined bucket c (0/1), bucket j (0/1).
  struct Pos {
    uint32_t bucket = 0;  // bucket number in the subtable (the agreement's order)
    uint32_t slot = 0;
    bool operator<(const Pos& o) const {
      return bucket != o.bucket ? bucket < o.bucket : slot < o.slot;
    }
    bool operator==(const Pos&) const = default;
  };
  // The two combined buckets as read, plus their headers re-read after the slots (or, for a view
  // read without the re-reads, the headers as read).
  struct View {
    GlobalAddress table;
    uint64_t w[2][16];
    uint64_t hdr2[2][2];
    uint32_t first[2];  // bucket number of each combined bucket's first bucket
    bool pending = false;
    uint64_t header(unsigned c, unsigned j) const { return w[c][8 * j]; }
    uint64_t slot(unsigned c, unsigned j, unsigned k) const { return w[c][8 * j + 1 + k]; }
  };
  static constexpr size_t kMaxCands = 4 * kSlotsPerBucket;
  static constexpr size_t kMaxNodeBatches = 4;  // KV blocks on more nodes cost extra trips
  struct Cands {
    // Only the first n entries are ever read: the arrays are left uninitialised (zeroing the
    // positions cost a search 33 instructions).
    Cands() {}
    size_t n = 0;
    union {
      Pos pos[kMaxCands];
    };
    uint64_t words[kMaxCands];
    uint32_t off[kMaxCands];  // after read_blocks: candidate i's block at blocks_ + off[i]
  };
  struct Found {
    int idx = -1;  // the first candidate holding the key, in agreement order
    bool torn = false;
    uint32_t matches = 0;  // bit i: candidate i holds the key
  };
  static_assert(kMaxCands <= 32);

  KeyHash hash(KeyView key) const {
    return KeyHash::of(key, geo_, opts_.max_global_depth);
  }

  GlobalAddress prepare_block(const KeyHash& kh, KeyView key, std::string_view value,
                              uint64_t& word) {
    if (value.size() > opts_.value_size)
      throw LimitError("RACE value of " + std::to_string(value.size()) +
                       " bytes exceeds Options::value_size of " + std::to_string(opts_.value_size) +
                       " bytes; nothing was stored");
    KvBlock::encode(key, value, block_);
    uint32_t units = static_cast<uint32_t>(block_.size() / kBlockUnit);
    GlobalAddress blk = c_->alloc(block_.size(), 64);
    word = Slot::make(kh.fp, units, blk);
    return blk;
  }

  static GlobalAddress slot_addr(GlobalAddress table, const Pos& p) {
    return Geometry::bucket_addr(table, p.bucket) + 8 + 8 * p.slot;
  }

  // One round trip: READ both combined buckets, with `reread_headers` re-READ their four headers
  // after them (so a header seen unchanged proves the slots were read before any split step 3,
  // notes choice 24), and WRITE the KV block when given (insert/update, on another node
  // possibly: still one trip). False when the view is unusable and the caller must retry: a
  // header changed during the read, or SRCD case 3 (the bucket no longer holds the key's suffix:
  // the directory cache is stale and has been refreshed). Sets v.pending when a bucket belongs to
  // a subtable still being filled. Without the re-reads, v.hdr2 holds the headers as read.
  bool read_view(const KeyHash& kh, View& v, const GlobalAddress* write_blk = nullptr,
                 bool reread_headers = true) {
    uint64_t entry = cache_.entry_for(*c_, kh.h);
    v.table = Dir::table(entry);
    Batch batches[2];
    for (unsigned c = 0; c < 2; ++c) {
      v.first[c] = Geometry::first_bucket_of(kh.main[c]);
      batches[0]
          .read(Geometry::combined_addr(v.table, kh.main[c]), v.w[c], kCombinedBytes)
          .hint(hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
    }
    if (reread_headers)
      for (unsigned c = 0; c < 2; ++c)
        for (unsigned j = 0; j < 2; ++j)
          batches[0]
              .read(Geometry::bucket_addr(v.table, v.first[c] + j), &v.hdr2[c][j], 8)
              .hint(hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
    size_t nb = 1;
    if (write_blk) {
      if (write_blk->node() == v.table.node())
        batches[0]
            .write(*write_blk, block_.data(), static_cast<uint32_t>(block_.size()))
            .hint(hint(FlushPoint::kBlockWriteBack, FlushHint::kWriteBack));
      else
        batches[nb++]
            .write(*write_blk, block_.data(), static_cast<uint32_t>(block_.size()))
            .hint(hint(FlushPoint::kBlockWriteBack, FlushHint::kWriteBack));
    }
    c_->run(std::span<Batch>(batches, nb));
    v.pending = false;
    bool stale = false;
    for (unsigned c = 0; c < 2; ++c)
      for (unsigned j = 0; j < 2; ++j) {
        const uint64_t h = v.header(c, j);
        if (!reread_headers)
          v.hdr2[c][j] = h;
        else if (h != v.hdr2[c][j])
          return false;
        if (!Header::valid_for(h, kh.h)) stale = true;
        if (Header::pending(h)) v.pending = true;
      }
    if (stale) {
      cache_.refresh(*c_);
      return false;
    }
    return true;
  }

  // Non-empty slots whose fingerprint matches, in the agreement's order (bucket, slot). Tentative
  // claims are skipped unless asked for: to every reader a key is absent until its claim is final.
  Cands candidates(const KeyHash& kh, const View& v, bool with_tentative = false) const {
    Cands cs;
    // The slots whose fingerprint matches (fp_matches), then of those the occupied ones; readers
    // skip tentative claims.
    const uint64_t skip = with_tentative ? 0 : Slot::kTentative;
    const unsigned low = v.first[1] < v.first[0] ? 1 : 0;  // the combined bucket first in order
    for (unsigned o = 0; o < 2; ++o) {
      const unsigned c = o ^ low;
      for (unsigned j = 0; j < 2; ++j) {
        const uint64_t* bucket = &v.w[c][8 * j];
        for (uint32_t m = fp_matches(bucket, kh.fp); m != 0; m &= m - 1) {
          const unsigned k = static_cast<unsigned>(std::countr_zero(m));
          const uint64_t w = bucket[1 + k];
          if (Slot::empty(w) || (w & skip) != 0) continue;
          cs.pos[cs.n] = {v.first[c] + j, k};
          cs.words[cs.n++] = w;
        }
      }
    }
    return cs;
  }

  // One round trip: every candidate block (one batch per node). The first block holding the key
  // in agreement order wins; a torn block (re-used under us) asks for a retry.
  Found read_blocks(KeyView key, Cands& cs) {
    uint32_t total = 0;
    for (size_t i = 0; i < cs.n; ++i) {
      cs.off[i] = total;
      total += Slot::bytes(cs.words[i]);
    }
    if (blocks_.size() < total) blocks_.resize(total);
    Batch batches[kMaxNodeBatches];
    size_t nb = 0;
    for (size_t i = 0; i < cs.n; ++i) {
      GlobalAddress a = Slot::block(cs.words[i]);
      size_t b = 0;
      while (b < nb && batches[b].node() != a.node()) ++b;
      if (b == nb) {
        if (nb == kMaxNodeBatches) {  // more nodes than batches: flush (rare; costs a round trip)
          c_->run(std::span<Batch>(batches, nb));
          for (auto& x : batches) x.clear();
          nb = 0;
          b = 0;
        }
        ++nb;
      }
      batches[b]
          .read(a, blocks_.data() + cs.off[i], Slot::bytes(cs.words[i]))
          .hint(hint(FlushPoint::kBlockInvalidate, FlushHint::kInvalidate));
    }
    c_->run(std::span<Batch>(batches, nb));
    Found f;
    for (size_t i = 0; i < cs.n; ++i) {
      auto r = KvBlock::check(block(cs, i), Slot::bytes(cs.words[i]), key);
      if (r == KvBlock::Check::kTorn) {
        f.torn = true;
        return f;
      }
      if (r != KvBlock::Check::kMatch) continue;
      f.matches |= uint32_t{1} << i;
      if (f.idx < 0) f.idx = static_cast<int>(i);
    }
    return f;
  }

  const char* block(const Cands& cs, size_t i) const {
    return blocks_.data() + cs.off[i];
  }

  // A miss decided by reading candidate blocks is only sound if those blocks still belonged to
  // their slots: an update or delete may have freed one after our bucket read and the allocator
  // may have handed it to another key (a whole block of another key passes the checksum). One
  // batch of 8 B slot re-reads, only when a fingerprint matched and the key was not found.
  bool slots_unchanged(GlobalAddress table, const Cands& cs) {
    if (cs.n == 0) return true;
    uint64_t now[kMaxCands];
    Batch b;
    for (size_t i = 0; i < cs.n; ++i)
      b.read(slot_addr(table, cs.pos[i]), &now[i], 8)
          .hint(hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
    c_->run(b);
    for (size_t i = 0; i < cs.n; ++i)
      if (now[i] != cs.words[i]) return false;
    return true;
  }

  // Search, update and remove read their view without the header re-reads (headers_in_view()):
  // a hit needs none. A final slot holding the key in the table read is where the key lives at
  // that moment: a split deletes the slot from the old subtable (step 3) before anyone may change
  // the key in the new one (its bucket stays pending until then), an update or delete that wins
  // the slot first makes that step 3 fail and the bucket be moved again, and an insert of the key
  // into a bucket whose header no longer holds its suffix withdraws. Only a miss can be wrong: a
  // header read before a split's step 1 with slots read after its step 3 misses a moved key
  // (notes choice 24). So a miss stands when the slots of the candidates read are unchanged (a
  // block we read may have been re-used) and, where a READ is not line-atomic (shm: header and
  // slots of one bucket are separate loads), the four headers read now are the ones of the view:
  // one batch, no round trip when it is empty (a line-atomic miss without candidates).
  bool miss_stands(const View& v, const Cands& cs) {
    const bool headers = !opts_.reread_headers_in_view && !c_->line_atomic();
    if (cs.n == 0 && !headers) return true;
    uint64_t now[kMaxCands];
    uint64_t hdr[2][2];
    Batch b;
    for (size_t i = 0; i < cs.n; ++i)
      b.read(slot_addr(v.table, cs.pos[i]), &now[i], 8)
          .hint(hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
    if (headers)
      for (unsigned c = 0; c < 2; ++c)
        for (unsigned j = 0; j < 2; ++j)
          b.read(Geometry::bucket_addr(v.table, v.first[c] + j), &hdr[c][j], 8)
              .hint(hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
    c_->run(b);
    for (size_t i = 0; i < cs.n; ++i)
      if (now[i] != cs.words[i]) return false;
    if (headers)
      for (unsigned c = 0; c < 2; ++c)
        for (unsigned j = 0; j < 2; ++j)
          if (hdr[c][j] != v.header(c, j)) return false;
    return true;
  }
  bool headers_in_view() const {
    return opts_.reread_headers_in_view;
  }

  // Slot choice (paper §3.2/§3.3, notes choice 8): the less-loaded of the two main buckets, then
  // the less-loaded overflow bucket; lowest free slot. Deterministic in the snapshot, so two
  // clients inserting one key from one snapshot race for the same slot (one CAS fails).
  bool pick_slot(const KeyHash& kh, const View& v, Pos& p) {
    auto free_in = [&](unsigned c, unsigned j) {
      unsigned n = 0;
      for (unsigned k = 0; k < kSlotsPerBucket; ++k) n += Slot::empty(v.slot(c, j, k));
      return n;
    };
    struct B {
      unsigned c, j, free;
    };
    B mains[2], ovfs[2];
    for (unsigned c = 0; c < 2; ++c) {
      unsigned jm = Geometry::is_main(kh.main[c], 0) ? 0 : 1;
      mains[c] = {c, jm, free_in(c, jm)};
      ovfs[c] = {c, 1 - jm, free_in(c, 1 - jm)};
    }
    unsigned salt = opts_.same_slot_for_same_key ? 0 : (c_->id() + static_cast<unsigned>(++picks_));
    for (B* pair : {mains, ovfs}) {
      B best = pair[0];
      if (pair[1].free > best.free || (pair[1].free == best.free && (salt & 1))) best = pair[1];
      if (best.free == 0) continue;
      unsigned skip = opts_.same_slot_for_same_key ? 0 : (salt >> 1) % best.free;
      for (unsigned k = 0; k < kSlotsPerBucket; ++k)
        if (Slot::empty(v.slot(best.c, best.j, k)) && skip-- == 0) {
          p = {v.first[best.c] + best.j, k};
          return true;
        }
    }
    return false;
  }

  // Adds the reads of a view of `table` for the key to `b`: both combined buckets, then their
  // four headers again (a header read unchanged after the slots proves no split step 3 hit them).
  void add_view_reads(Batch& b, const KeyHash& kh, GlobalAddress table, View& v) const {
    v.table = table;
    for (unsigned c = 0; c < 2; ++c) {
      v.first[c] = Geometry::first_bucket_of(kh.main[c]);
      b.read(Geometry::combined_addr(table, kh.main[c]), v.w[c], kCombinedBytes)
          .hint(hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
    }
    for (unsigned c = 0; c < 2; ++c)
      for (unsigned j = 0; j < 2; ++j)
        b.read(Geometry::bucket_addr(table, v.first[c] + j), &v.hdr2[c][j], 8)
            .hint(hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
  }
  // A split's hints (the resize path's points and the bucket and block ones).
  SplitHints split_hints() const {
    constexpr FlushHint kInv = FlushHint::kInvalidate, kWb = FlushHint::kWriteBack;
    return {hint(FlushPoint::kDirectoryInvalidate, kInv), hint(FlushPoint::kSubtableWriteBack, kWb),
            hint(FlushPoint::kBucketInvalidate, kInv), hint(FlushPoint::kBlockInvalidate, kInv)};
  }
  // The hint flush point `p` issues (none when a test switched the point off).
  FlushHint hint(FlushPoint p, FlushHint h) const {
    return flush_hint(opts_.faults.skip_flush, p, h);
  }
  void reread(const KeyHash& kh, GlobalAddress table, View& v) {
    Batch b;
    add_view_reads(b, kh, table, v);
    c_->run(b);
  }

  // Decides a tentative claim (dmrt's completion of the paper's §3.3 duplicate check, notes
  // choice 12). `r` is a view of `table` read after the claim CAS. With the other copies of the
  // key in that view:
  //  * none: CAS the claim final (the insert's linearization point) -> 1;
  //  * a final one: the key was present: withdraw the claim -> 0;
  //  * only tentative ones: the claim first in agreement order (bucket, slot) waits for the others
  //    to withdraw; every other claim withdraws -> -1 (the caller inserts again).
  // At most one claim of a key ever goes final: two claims that both saw no other copy would each
  // have read the other's slot before it was claimed, yet each claimed before reading.
  // A split may move a claim (the splitter copies words as they are); the claim is followed into
  // the new subtable. Only its owner and the splitter ever change a tentative slot.
  int settle_insert(const KeyHash& kh, KeyView key, GlobalAddress table, Pos own, uint64_t claim,
                    View r) {
    for (;;) {
      bool changed = false, moving = false, pending = false;
      for (unsigned c = 0; c < 2; ++c)
        for (unsigned j = 0; j < 2; ++j) {
          uint64_t h = r.header(c, j);
          if (h != r.hdr2[c][j]) changed = true;
          if (!Header::valid_for(h, kh.h)) moving = true;
          if (Header::pending(h)) pending = true;
        }
      if (changed || pending) {  // a split is working on these buckets: look again
        if (pending) await_split(r);
        reread(kh, table, r);
        continue;
      }
      if (moving) {
        // A split is moving this key's suffix to a new subtable. Withdraw the claim; if it is no
        // longer here, the splitter has moved it: find it in the key's current subtable.
        if (c_->cas(slot_addr(table, own), claim, 0) == claim) return -1;
        if (!follow_claim(kh, claim, table, own, r)) return -1;
        continue;
      }
      Cands cs = candidates(kh, r, /*with_tentative=*/true);
      bool own_present = false;
      Cands others;
      for (size_t i = 0; i < cs.n; ++i) {
        if (cs.pos[i] == own && cs.words[i] == claim) {
          own_present = true;
          continue;
        }
        others.pos[others.n] = cs.pos[i];
        others.words[others.n++] = cs.words[i];
      }
      if (!own_present) {  // moved by a split, or cancelled (await_claims): find it, or insert
                           // again
        if (!follow_claim(kh, claim, table, own, r)) return -1;
        continue;
      }
      uint32_t copies = 0;  // bit i: others[i] holds the key
      if (others.n) {
        Found f = read_blocks(key, others);
        if (f.torn || (!f.matches && !slots_unchanged(table, others))) {
          reread(kh, table, r);
          continue;
        }
        copies = f.matches;
      }
      bool final_copy = false, earlier_claim = false;
      for (size_t i = 0; i < others.n; ++i) {
        if (!(copies >> i & 1)) continue;
        if (!Slot::tentative(others.words[i]))
          final_copy = true;
        else if (others.pos[i] < own)
          earlier_claim = true;
      }
      uint64_t to = copies == 0 ? (claim & ~Slot::kTentative) : 0;
      if (copies != 0 && !final_copy && !earlier_claim) {
        // Ours is the first claim: the later ones withdraw (or finalize, if they never saw ours).
        await_claims(table, others, copies);
        reread(kh, table, r);
        continue;
      }
      if (c_->cas(slot_addr(table, own), claim, to) != claim) {
        // Moved by a split meanwhile, or cancelled: then the insert has not happened; again.
        if (!follow_claim(kh, claim, table, own, r)) return -1;
        continue;
      }
      if (to != 0) return 1;
      return final_copy ? 0 : -1;
    }
  }

  // Our claim is no longer where it was: a splitter moved it out of `table`, or another client
  // cancelled it (await_claims). Re-reads the directory and looks for the claim word in the
  // key's buckets of the subtable the key now maps to; a pending bucket may not hold it yet, so
  // it waits for the move. True with table, own and r updated when found; false when the claim
  // is gone (cancelled: the insert has not happened, and the caller inserts again).
  bool follow_claim(const KeyHash& kh, uint64_t claim, GlobalAddress& table, Pos& own, View& r) {
    for (;;) {
      cache_.refresh(*c_);
      table = Dir::table(cache_.entry_for(*c_, kh.h));
      reread(kh, table, r);
      bool pending = false;
      for (unsigned c = 0; c < 2; ++c)
        for (unsigned j = 0; j < 2; ++j) {
          pending |= Header::pending(r.header(c, j));
          for (unsigned k = 0; k < kSlotsPerBucket; ++k)
            if (r.slot(c, j, k) == claim) {
              own = {r.first[c] + j, k};
              return true;
            }
        }
      if (!pending) return false;
      await_split(r);
    }
  }

  // Waits for the verdict of other clients' tentative claims of a key (candidates `cs` of
  // `table`, those in `mask`). A claim names no process (its slot word has no room), so one whose
  // process died would be waited for for ever: once the first of them has stood unchanged for
  // the lease while some process is declared dead, this client cancels it (CAS to empty),
  // counted in `claims_cancelled`. A live owner whose claim was cancelled finds it gone and
  // inserts again (follow_claim): a claim is never final, so nothing it stood for is lost.
  void await_claims(GlobalAddress table, const Cands& cs, uint32_t mask) {
    c_->pause();
    size_t i = 0;
    while (i < cs.n && !((mask >> i & 1) && Slot::tentative(cs.words[i]))) ++i;
    if (i == cs.n) return;
    const uint64_t now = c_->now_ns();
    if (cs.words[i] != claim_seen_) {
      claim_seen_ = cs.words[i];
      claim_since_ = now;
      return;
    }
    if (now - claim_since_ < HolderWatch::kLeaseNs || !a_process_died()) return;
    if (c_->cas(slot_addr(table, cs.pos[i]), cs.words[i], 0) == cs.words[i])
      resize_cost_->claims_cancelled.fetch_add(1, std::memory_order_relaxed);
    claim_seen_ = 0;
  }
  bool a_process_died() const {
    for (unsigned t = 1; t < 256; ++t)
      if (c_->tag_dead(static_cast<uint8_t>(t))) return true;
    return false;
  }

  Splitter<T> splitter() {
    return Splitter<T>(*c_, cache_.dir(), geo_, opts_.max_global_depth, split_hints(),
                       &resize_cost_->takeovers, opts_.faults.split_dies_at);
  }

  // Waits while a bucket of `v` is pending (a split is moving it). A split whose process died
  // (S's canonical lock names a dead tag and stood for the lease) is rolled forward by this
  // client. The lock word is read at most once per lease per handle, and not in the first lease
  // of its first wait: a short wait for a live split costs no verb.
  void await_split(const View& v) {
    c_->pause();
    uint64_t hdr = 0;
    for (unsigned c = 0; c < 2; ++c)
      for (unsigned j = 0; j < 2; ++j)
        if (Header::pending(v.header(c, j))) hdr = v.header(c, j);
    const uint64_t now = c_->now_ns();
    if (hdr == 0 || Header::ld(hdr) == 0) return;
    if (split_checked_ns_ == 0 || now - split_checked_ns_ < HolderWatch::kLeaseNs) {
      if (split_checked_ns_ == 0) split_checked_ns_ = now;
      return;
    }
    split_checked_ns_ = now;
    const uint32_t l = Header::ld(hdr) - 1;  // S's depth; N's suffix has bit l set
    const uint32_t s = Header::suffix(hdr) & ~(uint32_t{1} << l);
    const uint64_t e = c_->template read_value<uint64_t>(
        Dir::entry_addr(cache_.dir(), s),
        hint(FlushPoint::kDirectoryInvalidate, FlushHint::kInvalidate));
    if (!Dir::locked(e) || Dir::ld(e) != l) return;
    if (!split_watch_.dead_tag(*c_, e, Dir::entry_owner(e))) return;
    splitter().take_over(s, e);
    cache_.refresh(*c_);
  }

  // Search when a bucket belongs to a subtable N still being filled by a split: the key may not
  // have moved yet. Read the source S first, then N again (a key that left S before the S read
  // was in N before it: step 2 precedes step 3), taking S's copy first (notes §5.5).
  bool search_pending(const KeyHash& kh, KeyView key, const View& first, std::string& out) {
    for (;;) {
      uint64_t src_raw = c_->template read_value<uint64_t>(first.table);
      GlobalAddress src = GlobalAddress::from_raw(src_raw);
      View s, n;
      for (View* v : {&s, &n}) {
        v->table = v == &s ? src : first.table;
        Batch b;
        for (unsigned c = 0; c < 2; ++c) {
          v->first[c] = Geometry::first_bucket_of(kh.main[c]);
          b.read(Geometry::combined_addr(v->table, kh.main[c]), v->w[c], kCombinedBytes)
              .hint(hint(FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
        }
        c_->run(b);
      }
      Cands cs = candidates(kh, s);
      Cands cn = candidates(kh, n);
      for (size_t i = 0; i < cn.n && cs.n < kMaxCands; ++i) {
        cs.pos[cs.n] = cn.pos[i];
        cs.words[cs.n++] = cn.words[i];
      }
      if (cs.n == 0) return false;
      Found f = read_blocks(key, cs);
      if (f.torn) continue;
      if (f.idx < 0) return false;
      out.assign(KvBlock::value_of(block(cs, f.idx)));
      return true;
    }
  }

  Client<T>* c_;
  Options opts_;
  bool byte_keys_ = false;  // key_size != 8
  Geometry geo_;
  DirectoryCache<T> cache_;
  std::shared_ptr<ResizeCost> resize_cost_;
  std::string block_;
  // The candidate blocks of the last read_blocks, back to back. Owned by the handle and only
  // grown: a std::string per candidate cost an allocation per search (2% of a sim run).
  std::vector<char> blocks_;
  uint64_t picks_ = 0;
  HolderWatch split_watch_;        // await_split's, on the lock of the split it waits for
  uint64_t split_checked_ns_ = 0;  // when await_split last read that lock (0: not yet waiting)
  uint64_t claim_seen_ = 0, claim_since_ = 0;  // await_claims': the claim waited for, since when
};

// The name every index namespace offers (dmrt/runtime/index.h's Index concept).
template <Transport T>
using Index = RaceIndex<T>;

}  // namespace dmrt::race
