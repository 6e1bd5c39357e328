// RACE extendible resizing (paper §3.4.2): lock, new subtable, doubling, per-bucket move 1-2-3.
#pragma once

#include <atomic>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "dmrt/indexes/race/detail/directory.h"
#include "dmrt/indexes/race/detail/layout.h"
#include "dmrt/indexes/race/detail/options.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/liveness.h"

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
// A split whose process died is rolled forward by a survivor (issue 39; take_over): every lock
// it takes names its process, and a waiter that sees one stand for the lease with a dead tag
// takes it over and finishes the split from what the pool shows. Unpublished N: S is unlocked
// and N leaks. Published: step 3's entries are rewritten, step 4 is redone for N's buckets still
// pending (a copy already in N is kept and its slot in S deleted; one the key's update in S
// superseded is dropped) and step 5 runs. Only a delete that won its slot in S after the dead
// splitter's copy (2) and before its delete (3), in the one bucket it was moving, comes back:
// the pool cannot tell that delete from the splitter's own (3).
// What the handles of one index object add up: round trips and bytes spent splitting subtables,
// and the repairs after a process died (issue 39).
struct ResizeCost {
  std::atomic<uint64_t> round_trips{0}, bytes_read{0}, bytes_written{0};
  std::atomic<uint64_t> takeovers{0};         // splits and root locks of dead processes taken over
  std::atomic<uint64_t> claims_cancelled{0};  // stale insert claims cancelled (index.h)
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

// Thrown where Options::faults.split_dies_at stops a split (fault-injection builds): the
// splitter's process is to be treated as dead from there on.
struct SplitterDied {};
// The same for an insert stopped after its tentative claim (Options::faults).
struct ClaimerDied {};

template <Transport T>
class Splitter {
 public:
  // `takeovers`: where to count the dead processes' locks this splitter takes over.
  Splitter(Client<T>& c, GlobalAddress dir, Geometry g, uint32_t max_depth, SplitHints h = {},
           std::atomic<uint64_t>* takeovers = nullptr, SplitDeath die = SplitDeath::kNever)
      : c_(c), dir_(dir), g_(g), max_depth_(max_depth), h_(h), takeovers_(takeovers), die_(die) {}

  // False when S was already split or is being split by someone else (after waiting for that
  // split to finish, or finishing it when its process died): the caller refreshes its directory
  // cache and retries its insert.
  bool split(GlobalAddress s_table, uint32_t l, uint32_t s) {
    GlobalAddress canon = Dir::entry_addr(dir_, s);
    uint64_t e = c_.template read_value<uint64_t>(canon, h_.dir_read);
    if (Dir::locked(e)) {
      // "The next resizing will be blocked until the previous resizing releases the lock."
      HolderWatch watch;
      while (Dir::locked(e)) {
        if (watch.dead_tag(c_, e, Dir::entry_owner(e))) {
          take_over(s, e);
          return false;
        }
        c_.pause();
        e = c_.template read_value<uint64_t>(canon, h_.dir_read);
      }
      return false;
    }
    if (Dir::table(e) != s_table || Dir::ld(e) != l) return false;
    if (c_.cas(canon, e, Dir::locked_entry(e, c_.process_tag())) != e) return false;
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
    die_at(SplitDeath::kAfterCreate);

    // 3. Publish N.
    uint32_t gd = Dir::gd(lock_root(c_, dir_, h_.dir_read, takeovers_));
    if (l == gd) gd = double_directory(gd);
    publish(gd, l, n_suffix, n_table);
    unlock_root(c_, dir_, gd);
    die_at(SplitDeath::kAfterPublish);

    // 4. Move, 5. finish.
    for (uint32_t b = 0; b < g_.buckets(); ++b) move_bucket(s_table, n_table, b, l, s, false);
    die_at(SplitDeath::kAfterMove);
    finish(s_table, n_table, l, s);
    return true;
  }

  // The canonical entry `e` of the subtable with suffix x is locked by a process declared dead
  // (the word stood for the lease). Finishes the split that lock belongs to: x's own (x is its
  // S), or, when x is the N of a split whose S is still locked at the depth below, that one.
  // False when another taker got there first.
  bool take_over(uint32_t x, uint64_t e) {
    const uint32_t l = Dir::ld(e);
    if (l >= 1 && (x >> (l - 1) & 1)) {
      const uint32_t p = x ^ (uint32_t{1} << (l - 1));
      const uint64_t pe = c_.template read_value<uint64_t>(Dir::entry_addr(dir_, p), h_.dir_read);
      if (Dir::locked(pe) && Dir::ld(pe) == l - 1) {
        // x's creating split is unfinished. Its S is locked by the same dead process (a live one
        // would be finishing it): roll that split forward, which releases x too.
        if (Dir::entry_owner(pe) != Dir::entry_owner(e)) return false;
        return roll_forward(p, pe);
      }
    }
    return roll_forward(x, e);
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
  // Takes the canonical lock of S (suffix s) from the dead word `dead` and finishes its split.
  bool roll_forward(uint32_t s, uint64_t dead) {
    GlobalAddress canon = Dir::entry_addr(dir_, s);
    if (c_.cas(canon, dead, Dir::locked_entry(dead, c_.process_tag())) != dead) return false;
    if (takeovers_) takeovers_->fetch_add(1, std::memory_order_relaxed);
    const GlobalAddress s_table = Dir::table(dead);
    const uint32_t l = Dir::ld(dead);
    const uint32_t n_suffix = s | (uint32_t{1} << l);
    uint32_t gd = Dir::gd(lock_root(c_, dir_, h_.dir_read, takeovers_));
    // N is whatever N's half of the directory names other than S (step 3 may have written part
    // of it). While S is locked at depth l, N cannot have been split, so that is N or nothing.
    GlobalAddress n_table;
    if (n_suffix < (uint64_t{1} << gd)) {
      std::vector<uint64_t> entries(size_t{1} << gd);
      c_.read(Dir::entry_addr(dir_, 0), entries.data(), static_cast<uint32_t>(8 * entries.size()),
              h_.dir_read);
      for (uint64_t j = n_suffix; j < entries.size(); j += uint64_t{2} << l)
        if (Dir::table(entries[j]) != s_table) {
          n_table = Dir::table(entries[j]);
          break;
        }
    }
    if (n_table.is_null()) {  // never published: undo (N, if made, leaks)
      unlock_root(c_, dir_, gd);
      uint64_t free = Dir::unlocked_entry(dead);
      c_.release(canon, &free, 8);
      return true;
    }
    const uint64_t source = c_.template read_value<uint64_t>(n_table, h_.bucket_read);
    if (source != s_table.raw())
      throw std::logic_error("RACE split roll-forward: the new subtable does not name its source");
    publish(gd, l, n_suffix, n_table);
    unlock_root(c_, dir_, gd);
    for (uint32_t b = 0; b < g_.buckets(); ++b) move_bucket(s_table, n_table, b, l, s, true);
    finish(s_table, n_table, l, s);
    return true;
  }

  // Step 3 under the root lock: N's half of the entries (suffix n_suffix at depth l + 1) name
  // N, its canonical entry locked by this process. Repeatable: a roll-forward redoes it whole.
  void publish(uint32_t gd, uint32_t l, uint32_t n_suffix, GlobalAddress n_table) {
    const uint64_t n_entry = Dir::make_entry(n_table, l + 1);
    const uint64_t n_locked = Dir::locked_entry(n_entry, c_.process_tag());
    const uint64_t step = uint64_t{2} << l;
    Batch b;
    for (uint64_t j = n_suffix; j < (uint64_t{1} << gd); j += step) {
      if (b.size() == Batch::kMaxVerbs) {
        c_.run(b);
        b.clear();
      }
      b.release(Dir::entry_addr(dir_, j), j == n_suffix ? &n_locked : &n_entry, 8);
    }
    if (!b.empty()) c_.run(b);
  }

  // Step 5 under the root lock: S's entries get depth l + 1 (its canonical one unlocked with
  // them), then N's canonical entry is unlocked.
  void finish(GlobalAddress s_table, GlobalAddress n_table, uint32_t l, uint32_t s) {
    uint32_t gd = Dir::gd(lock_root(c_, dir_, h_.dir_read, takeovers_));
    write_entries(gd, l + 1, s, Dir::make_entry(s_table, l + 1));
    die_at(SplitDeath::kMidFinish);
    uint64_t n_entry = Dir::make_entry(n_table, l + 1);
    c_.release(Dir::entry_addr(dir_, s | (uint32_t{1} << l)), &n_entry, 8);
    unlock_root(c_, dir_, gd);
    c_.faa(dir_ + Dir::kResizesOffset, 1);
  }

  void die_at([[maybe_unused]] SplitDeath at) const {
#ifdef DMRT_FAULT_INJECTION
    if (die_ == at) throw SplitterDied{};
#endif
  }

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
    uint64_t root = Dir::locked_root(gd + 1, c_.process_tag());
    c_.release(dir_ + Dir::kRootOffset, &root, 8);  // held: rewritten, not released
    return gd + 1;
  }

  // Writes `value` into every entry j < 2^gd with j's low `depth` bits equal to `suffix`.
  // Caller holds the root lock.
  void write_entries(uint32_t gd, uint32_t depth, uint32_t suffix, uint64_t value) {
    uint64_t step = uint64_t{1} << depth;
    Batch b;
    for (uint64_t j = suffix; j < (uint64_t{1} << gd); j += step) {
      if (b.size() == Batch::kMaxVerbs) {
        c_.run(b);
        b.clear();
      }
      b.release(Dir::entry_addr(dir_, j), &value, 8);
    }
    if (!b.empty()) c_.run(b);
  }

  // Step 4 for bucket b. `resume`: a dead splitter may have begun it (roll_forward): a bucket of
  // N no longer pending is done, S's header may be moved already, and N may hold copies.
  void move_bucket(GlobalAddress s_table, GlobalAddress n_table, uint32_t b, uint32_t l, uint32_t s,
                   bool resume) {
    GlobalAddress sb = Geometry::bucket_addr(s_table, b);
    GlobalAddress nb = Geometry::bucket_addr(n_table, b);
    uint64_t old_hdr = 0;
    uint64_t words[8];
    uint64_t mirror[kSlotsPerBucket] = {};
    if (resume) {
      uint64_t nw[8];
      c_.read(nb, nw, 64, h_.bucket_read);
      if (!Header::pending(nw[0])) return;
      for (unsigned k = 0; k < kSlotsPerBucket; ++k) mirror[k] = nw[1 + k];
    }
    {
      // (1): the header CAS and the read of the bucket in one batch, read after the CAS.
      Batch bt;
      bt.cas(sb, Header::make(l, s), Header::make(l + 1, s), &old_hdr)
          .read(sb, words, 64)
          .hint(h_.bucket_read);
      c_.run(bt);
      if (old_hdr != Header::make(l, s) && !(resume && old_hdr == Header::make(l + 1, s)))
        throw std::logic_error("RACE split found an unexpected bucket header in the old subtable");
    }
    bool reconcile = resume;  // the dead splitter's copies, checked once against S
    for (;;) {
      // Which items move? The fingerprint cannot tell: read their KV blocks (notes choice 20).
      std::vector<std::pair<unsigned, uint64_t>> items;
      for (unsigned k = 0; k < kSlotsPerBucket; ++k)
        if (!Slot::empty(words[1 + k])) items.push_back({k, words[1 + k]});
      std::vector<std::pair<unsigned, uint64_t>> moving;
      std::vector<std::string> moving_keys;
      bool torn = false;
      if (!items.empty()) {
        std::vector<std::string> blocks(items.size());
        if (!read_blocks(items, blocks)) torn = true;  // the slot changed under us
        for (size_t i = 0; i < items.size() && !torn; ++i) {
          // Rehashed from the key bytes the block holds (the integer key's native bytes at
          // key_size 8), the same bytes its inserter hashed.
          std::string_view key = KvBlock::key_of(blocks[i].data());
          if ((KeyHash::suffix_hash(key) >> l) & 1) {
            moving.push_back(items[i]);
            if (reconcile) moving_keys.emplace_back(key);
          }
        }
      }
      if (torn) {
        c_.read(sb, words, 64, h_.bucket_read);
        continue;
      }
      std::vector<bool> copied(moving.size(), false);
      if (reconcile) {
        reconcile = false;
        reconcile_copies(nb, l, mirror, moving, moving_keys, copied);
      }
      if (moving.empty()) break;
      // (2) insert the copies into N's bucket b, the same slot when free. Only this splitter
      // writes a pending bucket, so `mirror` is exact. An item with no room (only a late insert
      // re-using a slot already moved could cause it) stays: its inserter sees the new header,
      // removes it and re-inserts into N (paper §3.4.2, concurrent insertion).
      std::vector<int> place(moving.size(), -1);
      for (size_t i = 0; i < moving.size(); ++i) {
        if (copied[i]) continue;  // placed by reconcile_copies
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
      for (size_t i = 0; i < moving.size(); ++i)
        if (copied[i])
          for (unsigned k = 0; k < kSlotsPerBucket; ++k)
            if (mirror[k] == moving[i].second) place[i] = static_cast<int>(k);
      std::vector<uint64_t> olds(moving.size());
      Batch ins;
      bool placed = false;
      for (size_t i = 0; i < moving.size(); ++i) {
        placed |= place[i] >= 0;
        if (place[i] >= 0 && !copied[i])
          ins.cas(nb + 8 + 8 * place[i], 0, moving[i].second, &olds[i]);
      }
      if (!placed) break;
      if (!ins.empty()) c_.run(ins);
      for (size_t i = 0; i < moving.size(); ++i)
        if (place[i] >= 0 && !copied[i] && olds[i] != 0)
          throw std::logic_error("RACE split found a pending bucket slot occupied");
      die_at(SplitDeath::kMidMove);
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

  // Reads the KV blocks of `items` (slot words) into `blocks`, one batch per memory node; false
  // when one is torn (its slot changed since it was read).
  bool read_blocks(const std::vector<std::pair<unsigned, uint64_t>>& items,
                   std::vector<std::string>& blocks) {
    blocks.resize(items.size());
    std::vector<Batch> batches;
    for (size_t i = 0; i < items.size(); ++i) {
      GlobalAddress a = Slot::block(items[i].second);
      blocks[i].resize(Slot::bytes(items[i].second));
      add_to(batches, a)
          .read(a, blocks[i].data(), Slot::bytes(items[i].second))
          .hint(h_.block_read);
    }
    c_.run(std::span<Batch>(batches));
    bool intact = true;
    for (const std::string& blk : blocks)
      intact = intact && KvBlock::intact(blk.data(), static_cast<uint32_t>(blk.size()));
    return intact;
  }

  // Roll-forward of a bucket a dead splitter began: `mirror` holds N's bucket as it left it.
  // A copy of an item still in S (same word) is kept and marked `copied` (step (3) remains);
  // a copy whose key S now holds under another word (an update won) or whose block no longer
  // holds a key of this bucket (deleted, its block re-used) is dropped; any other copy is kept:
  // its slot in S was deleted, by the dead splitter's (3) or, undecidably, by a delete.
  void reconcile_copies(GlobalAddress nb, uint32_t l, uint64_t (&mirror)[kSlotsPerBucket],
                        const std::vector<std::pair<unsigned, uint64_t>>& moving,
                        const std::vector<std::string>& moving_keys, std::vector<bool>& copied) {
    std::vector<std::pair<unsigned, uint64_t>> others;
    for (unsigned k = 0; k < kSlotsPerBucket; ++k) {
      if (mirror[k] == 0) continue;
      bool same = false;
      for (size_t i = 0; i < moving.size(); ++i)
        if (moving[i].second == mirror[k]) same = copied[i] = true;
      if (!same) others.push_back({k, mirror[k]});
    }
    if (others.empty()) return;
    std::vector<std::string> blocks;
    read_blocks(others, blocks);  // a torn block is checked one by one below
    Batch clean;
    for (size_t i = 0; i < others.size(); ++i) {
      const std::string& blk = blocks[i];
      bool keep = KvBlock::intact(blk.data(), static_cast<uint32_t>(blk.size()));
      if (keep) {
        std::string_view key = KvBlock::key_of(blk.data());
        keep = ((KeyHash::suffix_hash(key) >> l) & 1) != 0;
        for (const std::string& k : moving_keys) keep = keep && k != key;
      }
      if (keep) continue;
      clean.cas(nb + 8 + 8 * others[i].first, others[i].second, 0);
      mirror[others[i].first] = 0;
    }
    if (!clean.empty()) c_.run(clean);
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
  std::atomic<uint64_t>* takeovers_;
  SplitDeath die_;
};

}  // namespace dmrt::race
