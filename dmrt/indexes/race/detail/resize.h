// RACE extendible resizing (paper §3.4.2): lock, new subtable, doubling, per-bucket move 1-2-3.
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "dmrt/indexes/race/detail/directory.h"
#include "dmrt/indexes/race/detail/layout.h"
#include "dmrt/runtime/client.h"

namespace dmrt::race {

// Splits subtable S (local depth l, suffix s) into S (l+1, s) and a new N (l+1, s | 1<<l).
// Run by the client whose insert found both combined buckets full. One-sided only.
//
// Order, and why it keeps concurrent operations correct (notes §5.4-5.5, choices 17-24):
//  1. CAS the lock bit of S's canonical directory entry: other splits of S wait; IDU does not.
//  2. Create N with every bucket header marked `pending`, and meta word 0 = S. A reader that
//     reaches a pending bucket knows its keys may still sit in S (searches look in S, then N;
//     mutators wait for the bucket to clear, the paper's "wait for the movement").
//  3. Under the root lock: double the directory if l == GD (append-only copy into the unused
//     area, then publish GD+1), then point the entries of N's half at N (canonical one locked).
//  4. Per bucket b of S: (1) CAS header to (l+1, s) and read the bucket in the same batch;
//     (2) CAS every item whose hash bit l is set into N's bucket b, same slot (free: only the
//     splitter writes a pending bucket); (3) CAS those slots of S to 0. A (3) that fails means an
//     update/delete won the slot: clean the copy in N and redo the bucket. Then clear `pending`
//     on N's bucket b, after (3), so anyone who sees it clear sees the move of b complete.
//  5. Under the root lock: set LD l+1 on S's entries (unlocking S), unlock N's entry.
// Round trips and bytes spent splitting subtables, summed over the handles of one index object.
struct ResizeCost {
  std::atomic<uint64_t> round_trips{0}, bytes_read{0}, bytes_written{0};
  void add(const VerbCounters& d) {
    round_trips.fetch_add(d.round_trips, std::memory_order_relaxed);
    bytes_read.fetch_add(d.bytes_read, std::memory_order_relaxed);
    bytes_written.fetch_add(d.bytes_written, std::memory_order_relaxed);
  }
};

// The hints of a split's verbs (FlushPoint): the index's flush points, less those a test removed.
struct SplitHints {
  FlushHint dir_read = FlushHint::kNone;     // kDirectoryInvalidate
  FlushHint table_write = FlushHint::kNone;  // kSubtableWriteBack
  FlushHint bucket_read = FlushHint::kNone;  // kBucketInvalidate
  FlushHint block_read = FlushHint::kNone;   // kBlockInvalidate
};

template <Transport T>
class Splitter {
 public:
  Splitter(Client<T>& c, GlobalAddress dir, Geometry g, uint32_t max_depth, SplitHints h = {})
      : c_(c), dir_(dir), g_(g), max_depth_(max_depth), h_(h) {}

  // False when S was already split or is being split by someone else (after waiting for that
  // split to finish): the caller refreshes its directory cache and retries its insert.
  bool split(GlobalAddress s_table, uint32_t l, uint32_t s) {
    GlobalAddress canon = Dir::entry_addr(dir_, s);
    uint64_t e = c_.template read_value<uint64_t>(canon, h_.dir_read);
    if (Dir::locked(e)) {
      // "The next resizing will be blocked until the previous resizing releases the lock."
      while (Dir::locked(c_.template read_value<uint64_t>(canon, h_.dir_read))) c_.pause();
      return false;
    }
    if (Dir::table(e) != s_table || Dir::ld(e) != l) return false;
    if (c_.cas(canon, e, e | Dir::kLock) != e) return false;
    if (l + 1 > max_depth_) {
      c_.release(canon, &e, 8);
      throw LimitError("RACE directory is full: a subtable at local depth " + std::to_string(l) +
                       " needs a split beyond max_global_depth " + std::to_string(max_depth_) +
                       " (raise max_global_depth or groups_per_subtable)");
    }
    uint32_t n_suffix = s | (uint32_t{1} << l);
    GlobalAddress n_table;
    try {
      n_table = create_subtable(c_, g_, l + 1, n_suffix, /*pending=*/true, s_table, h_.table_write);
    } catch (...) {  // pool exhausted: nothing is published yet, so unlocking undoes the split
      release_quietly(canon, e);
      throw;
    }
    c_.faa(dir_ + Dir::kSubtablesOffset, 1);

    // 3. Publish N.
    uint32_t gd = Dir::gd(lock_root(c_, dir_, h_.dir_read));
    if (l == gd) gd = double_directory(gd);
    write_entries(gd, l + 1, n_suffix, Dir::make_entry(n_table, l + 1), n_suffix);
    unlock_root(c_, dir_, gd);

    // 4. Move.
    for (uint32_t b = 0; b < g_.buckets(); ++b) move_bucket(s_table, n_table, b, l, s);

    // 5. Finish.
    gd = Dir::gd(lock_root(c_, dir_, h_.dir_read));
    write_entries(gd, l + 1, s, Dir::make_entry(s_table, l + 1), ~0u);
    uint64_t n_entry = Dir::make_entry(n_table, l + 1);
    c_.release(Dir::entry_addr(dir_, n_suffix), &n_entry, 8);
    unlock_root(c_, dir_, gd);
    c_.faa(dir_ + Dir::kResizesOffset, 1);
    return true;
  }

  // Allocates and formats a subtable (one WRITE of its image, with `hint`). Also used by create().
  static GlobalAddress create_subtable(Client<T>& c, const Geometry& g, uint32_t ld,
                                       uint32_t suffix, bool pending, GlobalAddress source,
                                       FlushHint hint) {
    GlobalAddress t = c.alloc(g.bytes(), 64);
    std::vector<uint64_t> img(g.bytes() / 8, 0);
    img[0] = source.raw();
    uint64_t h = Header::make(ld, suffix, pending);
    for (uint32_t b = 0; b < g.buckets(); ++b) img[(kSubtableMetaBytes + b * kBucketBytes) / 8] = h;
    c.write(t, img.data(), static_cast<uint32_t>(g.bytes()), hint);
    return t;
  }

 private:
  // Restores a lock word on an error path; a transport that fails here has failed for every
  // client, so the original error is the one worth reporting.
  void release_quietly(GlobalAddress word, uint64_t value) noexcept {
    try {
      c_.release(word, &value, 8);
    } catch (...) {
    }
  }

  // Append-only doubling: entries [2^gd, 2^(gd+1)) become copies of [0, 2^gd) without lock bits
  // (a lock lives only in a canonical entry), then GD+1 is published. Caller holds the root lock.
  uint32_t double_directory(uint32_t gd) {
    size_t n = size_t{1} << gd;
    std::vector<uint64_t> e(n);
    c_.read(Dir::entry_addr(dir_, 0), e.data(), static_cast<uint32_t>(8 * n), h_.dir_read);
    for (auto& x : e) x &= ~Dir::kLock;
    // Always written back, not a flush point (options.h says why).
    c_.write(Dir::entry_addr(dir_, n), e.data(), static_cast<uint32_t>(8 * n),
             FlushHint::kWriteBack);
    uint64_t root = (gd + 1) | Dir::kLock;
    c_.release(dir_ + Dir::kRootOffset, &root, 8);  // held: rewritten, not released
    return gd + 1;
  }

  // Writes `value` into every entry j < 2^gd with j's low `depth` bits equal to `suffix`; the
  // entry at index `locked_idx` gets the lock bit. Caller holds the root lock.
  void write_entries(uint32_t gd, uint32_t depth, uint32_t suffix, uint64_t value,
                     uint32_t locked_idx) {
    uint64_t step = uint64_t{1} << depth;
    uint64_t locked = value | Dir::kLock;
    Batch b;
    for (uint64_t j = suffix; j < (uint64_t{1} << gd); j += step) {
      if (b.size() == Batch::kMaxVerbs) {
        c_.run(b);
        b.clear();
      }
      b.release(Dir::entry_addr(dir_, j), j == locked_idx ? &locked : &value, 8);
    }
    if (!b.empty()) c_.run(b);
  }

  void move_bucket(GlobalAddress s_table, GlobalAddress n_table, uint32_t b, uint32_t l,
                   uint32_t s) {
    GlobalAddress sb = Geometry::bucket_addr(s_table, b);
    GlobalAddress nb = Geometry::bucket_addr(n_table, b);
    uint64_t old_hdr = 0;
    uint64_t words[8];
    uint64_t mirror[kSlotsPerBucket] = {};
    {
      // (1): the header CAS and the read of the bucket in one batch, read after the CAS.
      Batch bt;
      bt.cas(sb, Header::make(l, s), Header::make(l + 1, s), &old_hdr)
          .read(sb, words, 64)
          .hint(h_.bucket_read);
      c_.run(bt);
      if (old_hdr != Header::make(l, s))
        throw std::logic_error("RACE split found an unexpected bucket header in the old subtable");
    }
    for (;;) {
      // Which items move? The fingerprint cannot tell: read their KV blocks (notes choice 20).
      std::vector<std::pair<unsigned, uint64_t>> items;
      for (unsigned k = 0; k < kSlotsPerBucket; ++k)
        if (!Slot::empty(words[1 + k])) items.push_back({k, words[1 + k]});
      std::vector<std::pair<unsigned, uint64_t>> moving;
      bool torn = false;
      if (!items.empty()) {
        std::vector<std::string> blocks(items.size());
        std::vector<Batch> batches;
        for (size_t i = 0; i < items.size(); ++i) {
          GlobalAddress a = Slot::block(items[i].second);
          blocks[i].resize(Slot::bytes(items[i].second));
          add_to(batches, a)
              .read(a, blocks[i].data(), Slot::bytes(items[i].second))
              .hint(h_.block_read);
        }
        c_.run(std::span<Batch>(batches));
        for (size_t i = 0; i < items.size(); ++i) {
          const char* p = blocks[i].data();
          if (!KvBlock::intact(p, static_cast<uint32_t>(blocks[i].size()))) {
            torn = true;  // the slot changed under us: re-read the bucket
            break;
          }
          // Rehashed from the key bytes the block holds (the integer key's native bytes at
          // key_size 8), the same bytes its inserter hashed.
          if ((KeyHash::suffix_hash(KvBlock::key_of(p)) >> l) & 1) moving.push_back(items[i]);
        }
      }
      if (torn) {
        c_.read(sb, words, 64, h_.bucket_read);
        continue;
      }
      if (moving.empty()) break;
      // (2) insert the copies into N's bucket b, the same slot when free. Only this splitter
      // writes a pending bucket, so `mirror` is exact. An item with no room (only a late insert
      // re-using a slot already moved could cause it) stays: its inserter sees the new header,
      // removes it and re-inserts into N (paper §3.4.2, concurrent insertion).
      std::vector<int> place(moving.size(), -1);
      for (size_t i = 0; i < moving.size(); ++i) {
        int k = static_cast<int>(moving[i].first);
        if (mirror[k] != 0) {
          k = -1;
          for (unsigned j = 0; j < kSlotsPerBucket; ++j)
            if (mirror[j] == 0) {
              k = static_cast<int>(j);
              break;
            }
        }
        if (k < 0) continue;
        place[i] = k;
        mirror[k] = moving[i].second;
      }
      std::vector<uint64_t> olds(moving.size());
      Batch ins;
      for (size_t i = 0; i < moving.size(); ++i)
        if (place[i] >= 0) ins.cas(nb + 8 + 8 * place[i], 0, moving[i].second, &olds[i]);
      if (ins.empty()) break;
      c_.run(ins);
      for (size_t i = 0; i < moving.size(); ++i)
        if (place[i] >= 0 && olds[i] != 0)
          throw std::logic_error("RACE split found a pending bucket slot occupied");
      // (3) delete them from S.
      Batch del;
      for (size_t i = 0; i < moving.size(); ++i)
        if (place[i] >= 0) del.cas(sb + 8 + 8 * moving[i].first, moving[i].second, 0, &olds[i]);
      c_.run(del);
      Batch clean;
      for (size_t i = 0; i < moving.size(); ++i)
        if (place[i] >= 0 && olds[i] != moving[i].second) {
          // An update/delete won the slot: drop our copy and redo the bucket.
          clean.cas(nb + 8 + 8 * place[i], moving[i].second, 0);
          mirror[place[i]] = 0;
        }
      if (clean.empty()) break;
      c_.run(clean);
      c_.read(sb, words, 64, h_.bucket_read);
    }
    uint64_t done = Header::make(l + 1, s | (uint32_t{1} << l));
    c_.write(nb, &done, 8, h_.table_write);
  }

  static Batch& add_to(std::vector<Batch>& batches, GlobalAddress a) {
    for (Batch& b : batches)
      if (b.node() == a.node()) return b;
    batches.emplace_back();
    return batches.back();
  }

  Client<T>& c_;
  GlobalAddress dir_;
  Geometry g_;
  uint32_t max_depth_;
  SplitHints h_;
};

}  // namespace dmrt::race
