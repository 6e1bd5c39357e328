// linprobe: a one-sided hash table with linear probing in a fixed window, the worked example of
// docs/new-index.md. The table (create/attach/stats) and its per-client handle.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmrt/indexes/linprobe/detail/layout.h"
#include "dmrt/indexes/linprobe/detail/options.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/kv.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::linprobe {

template <Transport T>
class HashTable {
 public:
  using Options = linprobe::Options;
  class Handle;

  // Writes the table (zeros: a pool on a file or device may hold old bytes) and its meta line,
  // then publishes its address in the root slot, last, so that an attacher sees a whole table.
  [[gnu::noinline]] static std::shared_ptr<HashTable> create(Client<T>& c, const Options& o) {
    auto t = std::shared_ptr<HashTable>(new HashTable(c, o));
    const uint64_t bytes = kBucketBytes * (1 + t->opts_.buckets + t->opts_.window - 1);
    t->table_ = c.alloc_on(t->opts_.home, bytes, 64);
    const std::vector<uint64_t> zeros(kChunkBuckets * kBucketBytes / 8, 0);
    for (uint64_t off = 0; off < bytes; off += kChunkBuckets * kBucketBytes)
      c.write(t->table_ + off, zeros.data(),
              static_cast<uint32_t>(std::min(kChunkBuckets * kBucketBytes, bytes - off)),
              FlushHint::kWriteBack);  // setup: written back whatever the flush points
    const Meta m = t->meta();
    c.write(t->table_, &m, sizeof m, FlushHint::kWriteBack);
    const uint64_t raw = t->table_.raw();
    c.write(layout::root_slot(t->opts_.home, t->opts_.root_slot), &raw, 8, FlushHint::kWriteBack);
    return t;
  }

  // Joins a table another client or process created with the same options.
  [[gnu::noinline]] static std::shared_ptr<HashTable> attach(Client<T>& c, const Options& o) {
    auto t = std::shared_ptr<HashTable>(new HashTable(c, o));
    const std::string where = "root slot " + std::to_string(t->opts_.root_slot) + " of node " +
                              std::to_string(t->opts_.home);
    const uint64_t raw =
        c.template read_value<uint64_t>(layout::root_slot(t->opts_.home, t->opts_.root_slot),
                                        FlushHint::kInvalidate);  // another host's, perhaps
    if (raw == 0) throw ConfigError("no linprobe table at " + where + " (create it first)");
    t->table_ = GlobalAddress::from_raw(raw);
    Meta m;
    c.read(t->table_, &m, sizeof m, FlushHint::kInvalidate);
    if (!(m == t->meta()))
      throw ConfigError("the linprobe table at " + where +
                        " was created with other buckets, window or value_size than these options");
    return t;
  }

  Handle handle(Client<T>& c) { return Handle(c, *this); }

  // Reads the whole table (between phases): load_factor, items, slots, buckets, window, and
  // locks_held (0 when no insert runs).
  [[gnu::noinline]] IndexStats stats(Client<T>& c) {
    double items = 0, locks = 0;
    for_each_bucket(c, [&](uint64_t, const uint64_t* w) {
      locks += w[0] != 0;
      for (unsigned k = 1; k <= kSlotsPerBucket; ++k) items += w[k] != 0;
    });
    const double slots = static_cast<double>((opts_.buckets + opts_.window - 1) * kSlotsPerBucket);
    return {{"load_factor", items / slots},
            {"items", items},
            {"slots", slots},
            {"buckets", static_cast<double>(opts_.buckets)},
            {"window", static_cast<double>(opts_.window)},
            {"locks_held", locks}};
  }

  // Every stored pair, read slot by slot: for tests, with no operation running.
  std::vector<std::pair<Key, std::string>> items(Client<T>& c) {
    std::vector<std::pair<Key, std::string>> out;
    std::vector<char> b(Block::bytes(opts_.value_size));
    for_each_bucket(c, [&](uint64_t, const uint64_t* w) {
      for (unsigned k = 1; k <= kSlotsPerBucket; ++k) {
        if (w[k] == 0) continue;
        c.read(Slot::block(w[k]), b.data(), static_cast<uint32_t>(b.size()));
        out.emplace_back(Block::key(b.data()), Block::value(b.data()));
      }
    });
    return out;
  }

  const Options& options() const { return opts_; }

 private:
  static constexpr uint64_t kChunkBuckets = 16384;  // 1 MiB per READ or WRITE of the whole table

  HashTable(Client<T>& c, const Options& o) : opts_(o) {
    if (opts_.home == kFirstMemoryNode) opts_.home = c.memory_nodes().at(0);
    validate_option_fields("linprobe", opts_);
    if (opts_.value_size > kMaxValueBytes)
      throw ConfigError("linprobe value_size " + std::to_string(opts_.value_size) +
                        " exceeds the largest block's " + std::to_string(kMaxValueBytes));
    if (opts_.expected_keys)
      opts_.buckets = std::max(opts_.buckets, opts_.expected_keys * 4 / kSlotsPerBucket + 1);
  }
  Meta meta() const { return {kMagic, opts_.buckets, opts_.window, opts_.value_size}; }
  static GlobalAddress bucket_addr(GlobalAddress table, uint64_t b) {
    return table + kBucketBytes * (1 + b);
  }
  template <class F>
  void for_each_bucket(Client<T>& c, F f) {
    const uint64_t n = opts_.buckets + opts_.window - 1;
    std::vector<uint64_t> img(kChunkBuckets * kBucketBytes / 8);
    for (uint64_t b = 0; b < n; b += kChunkBuckets) {
      const uint64_t m = std::min(kChunkBuckets, n - b);
      c.read(bucket_addr(table_, b), img.data(), static_cast<uint32_t>(m * kBucketBytes));
      for (uint64_t i = 0; i < m; ++i) f(b + i, &img[i * kBucketBytes / 8]);
    }
  }

  Options opts_;
  GlobalAddress table_;
};

// Per client (one fiber). Satisfies dmrt::KvHandle. Each operation reads the key's window in
// one READ, then confirms a fingerprint match by reading its block (README "Correctness").
template <Transport T>
class HashTable<T>::Handle {
 public:
  Handle(Client<T>& c, const HashTable& t)
      : c_(&c),
        opts_(t.opts_),
        table_(t.table_),
        block_bytes_(Block::bytes(t.opts_.value_size)),
        staged_(block_bytes_),
        got_(block_bytes_),
        owner_(uint64_t{c.id()} + 1) {
#ifdef DMRT_FAULT_INJECTION
    locking_ = !opts_.faults.insert_skips_lock;
#endif
  }

  // 2 round trips on a hit (the window; the block, with its slot again), 1 on a miss.
  [[gnu::noinline]] bool search(Key key, std::string& out) {
    const KeyHash h = hash(key);
    for (;;) {
      read_window(h);
      const Found f = find(h, key);
      if (f.changed) {
        c_->pause();
        continue;
      }
      if (f.slot < 0) return false;
      out.assign(Block::value(got_.data()));
      return true;
    }
  }

  // Insert-if-absent, 2 round trips: the home bucket's lock CAS, the window READ and the new
  // block's WRITE; then the CAS of a free slot and the lock's release, in one batch. The lock
  // serializes the inserts of one key, so the absence seen under it stays true until the CAS.
  [[gnu::noinline]] bool insert(Key key, std::string_view value) {
    const KeyHash h = hash(key);
    const GlobalAddress blk = stage(key, value);
    const uint64_t word = Slot::make(h.fp, blk);
    const GlobalAddress* write = &blk;
    for (;;) {
      const bool locked = read_window(h, write, /*lock=*/true);
      write = nullptr;
      if (!locked) {
        c_->pause();
        continue;
      }
      Found f = find(h, key);
      while (f.changed) {  // an update or remove raced us; no insert of the key can
        read_window(h);
        f = find(h, key);
      }
      const int free_slot = f.slot < 0 ? first_free() : -1;
      if (free_slot < 0) {
        unlock(h);
        c_->free(blk, block_bytes_);  // never published
        if (f.slot >= 0) return false;
        throw LimitError("linprobe: the " + std::to_string(opts_.window) + " buckets of key " +
                         std::to_string(key) + "'s window are full (" +
                         std::to_string(opts_.buckets) +
                         " buckets): size the table for the keys (Options::buckets or "
                         "expected_keys); nothing was stored");
      }
      uint64_t old = 0;
      Batch b;
      b.cas(slot_addr(h, static_cast<unsigned>(free_slot)), 0, word, &old);
      if (locking_) b.release(lock_addr(h), &kUnlocked, 8);
      c_->run(b);
      if (old == 0) return true;
      c_->pause();  // another key's insert took that slot, and our lock is gone: again
    }
  }

  // 3 round trips: the window with the new block's WRITE; the block found; the slot's CAS.
  [[gnu::noinline]] bool update(Key key, std::string_view value) {
    const KeyHash h = hash(key);
    const GlobalAddress blk = stage(key, value);
    return replace(h, key, Slot::make(h.fp, blk), &blk);
  }

  // 3 round trips: the window; the block found; the slot's CAS to empty.
  [[gnu::noinline]] bool remove(Key key) {
    return replace(hash(key), key, 0, nullptr);
  }

  // Windows read again because a matched slot changed or its block failed its checksum.
  uint64_t stale_reads() const {
    return stale_reads_;
  }

 private:
  static constexpr uint64_t kUnlocked = 0;
  struct Found {
    int slot = -1;  // in the window (bucket slot / 7, slot % 7), -1 = absent
    uint64_t word = 0;
    bool changed = false;  // the window read is stale: read it again
  };

  // The hint flush point `p` issues (none when a test switched the point off).
  FlushHint hint(FlushPoint p, FlushHint h) const {
    return flush_hint(opts_.faults.skip_flush, p, h);
  }
  KeyHash hash(Key key) const {
    return KeyHash::of(key, opts_.buckets);
  }
  unsigned slots() const {
    return opts_.window * kSlotsPerBucket;
  }
  uint64_t slot_word(unsigned i) const {
    return window_[8 * (i / kSlotsPerBucket) + 1 + i % kSlotsPerBucket];
  }
  GlobalAddress slot_addr(const KeyHash& h, unsigned i) const {
    return bucket_addr(table_, h.home + i / kSlotsPerBucket) + 8 + 8 * (i % kSlotsPerBucket);
  }
  GlobalAddress lock_addr(const KeyHash& h) const {
    return bucket_addr(table_, h.home);
  }
  int first_free() const {
    for (unsigned i = 0; i < slots(); ++i)
      if (slot_word(i) == 0) return static_cast<int>(i);
    return -1;
  }

  // Encodes the block of a new value and allocates its place (written by the next round trip).
  GlobalAddress stage(Key key, std::string_view v) {
    if (v.size() > opts_.value_size)
      throw LimitError("linprobe value of " + std::to_string(v.size()) +
                       " bytes exceeds Options::value_size of " + std::to_string(opts_.value_size) +
                       " bytes; nothing was stored");
    Block::encode(key, v, staged_.data(), block_bytes_);
    return c_->alloc(block_bytes_, 64);
  }

  // One round trip: READ the window, with the staged block's WRITE when `blk` is given (a batch
  // of its own when the block lies on another node: still one round trip), and with `lock` the
  // home bucket lock's CAS first, so that the READ follows it. False when another holds the lock.
  bool read_window(const KeyHash& h, const GlobalAddress* blk = nullptr, bool lock = false) {
    uint64_t old = 0;
    Batch b[2];
    if (lock && locking_) b[0].cas(lock_addr(h), 0, owner_, &old);
    b[0].read(bucket_addr(table_, h.home), window_, opts_.window * kBucketBytes)
        .hint(hint(FlushPoint::kWindowInvalidate, FlushHint::kInvalidate));
    size_t n = 1;
    if (blk)
      (blk->node() == table_.node() ? b[0] : b[n++])
          .write(*blk, staged_.data(), block_bytes_)
          .hint(hint(FlushPoint::kBlockWriteBack, FlushHint::kWriteBack));
    c_->run(std::span<Batch>(b, n));
    return old == 0;
  }
  void unlock(const KeyHash& h) {
    if (locking_) c_->release(lock_addr(h), &kUnlocked, 8);
  }

  // The slot of the window that holds `key`. Each fingerprint match costs a round trip that READs
  // its block and then its slot again, in that order (one batch when both are on one node; else
  // the slot's batch last, which shm performs last). A slot that changed or a block that fails its
  // checksum means the window is stale: `changed`.
  Found find(const KeyHash& h, Key key) {
    for (unsigned i = 0; i < slots(); ++i) {
      const uint64_t w = slot_word(i);
      if (w == 0 || Slot::fp(w) != h.fp) continue;
      const GlobalAddress blk = Slot::block(w), at = slot_addr(h, i);
      const bool one = blk.node() == at.node();
      uint64_t now = 0;
      Batch b[2];
      b[0].read(blk, got_.data(), block_bytes_)
          .hint(hint(FlushPoint::kBlockInvalidate, FlushHint::kInvalidate));
      b[one ? 0 : 1]
          .read(at, &now, 8)
          .hint(hint(FlushPoint::kWindowInvalidate, FlushHint::kInvalidate));
      c_->run(std::span<Batch>(b, one ? 1 : 2));
      if (now != w || !Block::intact(got_.data(), block_bytes_)) {
        ++stale_reads_;
        return {-1, 0, true};
      }
      if (Block::key(got_.data()) == key) return {static_cast<int>(i), w, false};
    }
    return {};
  }

  // Update (word: the new block's slot word) or remove (word 0): find the key, CAS its slot from
  // the word found; a lost CAS looks again. The winner frees the old block.
  bool replace(const KeyHash& h, Key key, uint64_t word, const GlobalAddress* blk) {
    for (;;) {
      read_window(h, blk);
      blk = nullptr;
      const Found f = find(h, key);
      if (f.changed) {
        c_->pause();
        continue;
      }
      if (f.slot < 0) {
        if (word) c_->free(Slot::block(word), block_bytes_);  // never published
        return false;
      }
      if (c_->cas(slot_addr(h, static_cast<unsigned>(f.slot)), f.word, word) != f.word) {
        c_->pause();
        continue;
      }
      c_->free(Slot::block(f.word), block_bytes_);
      return true;
    }
  }

  Client<T>* c_;
  Options opts_;
  GlobalAddress table_;
  uint32_t block_bytes_;
  std::vector<char> staged_, got_;  // the block to write; the block last read
  uint64_t window_[kMaxWindow * kBucketBytes / 8];
  uint64_t owner_;  // the lock word's value while this handle holds a lock
  uint64_t stale_reads_ = 0;
  bool locking_ = true;
};

// The name every index namespace offers (dmrt/runtime/index.h's Index concept).
template <Transport T>
using Index = HashTable<T>;

}  // namespace dmrt::linprobe
