// Collaborative table/lock service (DMTree §3.2-3.3): small tables with a tail lock word hosted on
// compute nodes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "dmrt/runtime/client.h"
#include "dmrt/runtime/collab/ring.h"
#include "dmrt/runtime/collab/slots.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/hash.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/sealed_object.h"

namespace dmrt::collab {

// What the service is, in one place (see dmrt/indexes/dmtree/README.md for the paper mapping):
//
// * Tables. A table is `1 + payload_words + 1` words: a sealed meta word (checksum, 24-bit
//   version, flags), the index's payload, and a lock word at the very end, so ONE write of the
//   whole table both publishes the payload and releases the lock ("embedded unlock"). Table `id`
//   lives at the same offset `area_base + id * table_bytes` on EVERY compute node: a pointer to a
//   table is valid everywhere, only its owner changes.
// * Ownership. The primary copy of table `id` is on owner(id): consistent hashing of the id over
//   a ring with `vnodes` virtual points per live compute node. Other compute nodes may keep
//   cached copies at the same offset (written with the kPrimary flag clear; never the lock word).
// * Membership. One word on the first memory node (root slot `membership_slot`):
//   epoch:16 | live mask:48 (bit = NodeId, so compute node ids must be < 48). A compute node joins
//   (attach) or leaves (leave) by CASing it to epoch+1 and then writing the new mask into a log
//   indexed by epoch (history of masks), so every node can compute the owner of a table at any
//   past epoch. Nodes re-read the word only when something tells them the view moved: a lock word
//   reading MOVED, or a lock held for a long time (liveness check). Steady-state operations never
//   touch the memory node for membership.
// * Lock word: 0 free; kHeld | node << 32 | client: held; kMoved | new owner: this copy is fenced
//   (ownership moved away). Whoever finds the primary copy invalid (kPrimary flag clear, torn, or
//   fenced while it is the owner) takes the table over: it holds the lock on the owner's copy,
//   fences the copy of every node that owned the table at some known epoch (CAS 0 -> MOVED,
//   waiting for live holders, stealing from departed ones), rebuilds the payload from the index's
//   data on the memory node (callback), and writes it as primary. So two copies never accept
//   writers at once, and a new primary starts from the truth in memory.
// * Leave: the node marks itself dead (epoch+1, bit cleared), then fences every table id on its
//   own region (CAS 0 -> MOVED, 32 per batch), so stale peers learn the new view on first touch.
//   The departed node's region must stay reachable until leave() returns (graceful leave). A
//   node that stops without leave() is declared dead by a peer (evict: the same membership
//   change and fencing, done by the peer on the dead node's region). Locks held by clients of a
//   departed node are recovered: a waiter that sees a lock held for `liveness_check_every` attempts
//   re-reads the membership and, if the holder's node is dead, steals the lock and rebuilds the
//   table. So are those of a process the client's Liveness declared dead and fenced (issue 39),
//   with no membership change: its node's region stays reachable on shm.
// * Baseline (on_memory_node = true): the same tables and lock words, but all on the first memory
//   node, with no ring and no copies: FP-B+-tree's placement.
struct Options {
  uint32_t payload_words = 7;
  uint64_t max_tables = 0;      // cap on table ids (0 = as many as the area holds)
  bool on_memory_node = false;  // baseline placement
  unsigned vnodes = 64;         // virtual nodes per compute node on the ring
  unsigned membership_slot = kDefaultMembershipSlot;  // root slots on the first memory node
  unsigned counter_slot = kDefaultCounterSlot;
  unsigned descriptor_slot = kDefaultDescriptorSlot;
  uint32_t max_epochs = 4096;          // membership changes the log can hold
  uint32_t id_chunk = 64;              // table ids claimed per FAA
  uint32_t liveness_check_every = 64;  // failed lock attempts between membership re-reads
  // Where a port to non-coherent memory flushes (FlushHint, dmrt/runtime/verbs.h): the hint on
  // READs of a primary table (locking or not) and on its WRITEs (new, rebuilt, and the embedded
  // unlock). A node's cached copies of peers' tables are its own and carry none. Not part of the
  // descriptor: each node's user chooses (the index's flush points).
  FlushHint table_read_hint = FlushHint::kNone;
  FlushHint table_write_hint = FlushHint::kNone;
  // The same for the membership: READs of its word (changed by CAS), of its log entries and of the
  // table-id counter. A log entry's WRITE needs none: the refresh() that follows every change
  // invalidates the entry's line, which writes it back. What create() writes always carries
  // kWriteBack.
  FlushHint membership_read_hint = FlushHint::kNone;
};

struct Stats {
  std::atomic<uint64_t> takeovers{0}, fences{0}, recovered_locks{0}, refreshes{0}, moved_seen{0},
      lock_retries{0}, torn_reads{0};
};

inline constexpr uint8_t kValid = 1, kPrimary = 2, kUserFlag0 = 4;
inline constexpr uint64_t kMoved = uint64_t{1} << 63;
inline constexpr uint64_t kHeld = uint64_t{1} << 62;
inline constexpr uint64_t kLogWritten = uint64_t{1} << 63;
inline constexpr uint64_t kDescMagic = 0x4c4c4f4342414c43ull;  // "CLABCOLL"

inline bool lock_held(uint64_t w) {
  return (w & kHeld) && !(w & kMoved);
}
inline NodeId holder_node(uint64_t w) {
  return static_cast<NodeId>((w >> 32) & 0xffff);
}

// Meta word of a table image: version (24 bits) and flags, sealed over the payload.
inline void seal_table(uint64_t* img, uint32_t payload_words, uint32_t version, uint8_t flags) {
  sealed::seal(
      img, payload_words,
      sealed::Meta{static_cast<uint8_t>(version), flags, static_cast<uint16_t>(version >> 8)});
}
inline bool verify_table(const uint64_t* img, uint32_t payload_words) {
  return sealed::verify(img, payload_words) && (sealed::meta_of(img).flags & kValid);
}
inline uint32_t table_version(const uint64_t* img) {
  sealed::Meta m = sealed::meta_of(img);
  return uint32_t{m.nv} | uint32_t{m.extra} << 8;
}
inline uint8_t table_flags(const uint64_t* img) {
  return sealed::meta_of(img).flags;
}

template <Transport T>
class Service {
 public:
  // First compute node: reserves the table area at one offset on every compute node (or on the
  // memory node for the baseline), writes the descriptor and the membership word with itself live.
  static std::shared_ptr<Service> create(Client<T>& c, const Options& o) {
    auto s = std::shared_ptr<Service>(new Service(c, o));
    NodeId mem0 = s->mem0_;
    uint64_t area = 0, max_tables = 0;
    if (o.on_memory_node) {
      max_tables = o.max_tables ? o.max_tables : (c.region_bytes(mem0) / 8) / s->table_bytes_;
      area = c.alloc_on(mem0, max_tables * s->table_bytes_, 64).raw();
    } else {
      if (c.role(c.home_node()) != NodeRole::kCompute)
        throw ConfigError("collab: create() needs a client homed on a compute node");
      std::tie(area, max_tables) = reserve_area(c, s->table_bytes_, o.max_tables);
    }
    GlobalAddress log = c.alloc_on(mem0, uint64_t{o.max_epochs} * 8, 64);
    std::vector<uint64_t> zeros(o.max_epochs, 0);
    constexpr FlushHint kWb = FlushHint::kWriteBack;
    c.write(log, zeros.data(), static_cast<uint32_t>(zeros.size() * 8), kWb);
    uint64_t mask = o.on_memory_node ? 0 : bit_of(c.home_node());
    uint64_t first = mask | kLogWritten;
    c.write(log + 8, &first, 8, kWb);
    uint64_t desc[8] = {kDescMagic, area,         max_tables, s->table_words_,
                        log.raw(),  o.max_epochs, o.vnodes,   o.on_memory_node ? 1u : 0u};
    GlobalAddress d = c.alloc_on(mem0, sizeof(desc), 64);
    c.write(d, desc, sizeof(desc), kWb);
    uint64_t zero = 0, mw = uint64_t{1} << 48 | mask, draw = d.raw();
    c.write(s->counter_, &zero, 8, kWb);
    c.write(s->membership_, &mw, 8, kWb);
    c.write(layout::root_slot(mem0, o.descriptor_slot), &draw, 8, kWb);
    s->load_descriptor(c);
    s->refresh(c);
    return s;
  }

  // Another compute node joins: reads the descriptor, adds itself to the membership (epoch+1).
  static std::shared_ptr<Service> attach(Client<T>& c, const Options& o) {
    auto s = std::shared_ptr<Service>(new Service(c, o));
    s->load_descriptor(c);
    if (!s->on_mn_) {
      if (c.role(c.home_node()) != NodeRole::kCompute)
        throw ConfigError("collab: attach() needs a client homed on a compute node");
      s->change_membership(c, bit_of(c.home_node()), 0);
    }
    s->refresh(c);
    return s;
  }

  // A peer declares compute node `n` dead: it stopped without leave() (crashed mid-operation,
  // or cut off), as a failure detector or the operator decides. Its tables move to the live
  // nodes (the new owners rebuild them from memory-node data and fence the dead node's copies),
  // and locks its clients held are recovered by their waiters (the liveness check). The dead
  // node's region must stay reachable for those fences (shm; a verbs node whose process died
  // but whose memory is served by a peer); `n` must never issue operations again.
  void evict(Client<T>& c, NodeId n) {
    if (on_mn_) return;
    if (n == home_) throw ConfigError("collab: a compute node cannot evict itself (use leave())");
    refresh(c);
    if (live(n)) change_membership(c, 0, bit_of(n));
    refresh(c);
    fence_region(c, n);
  }

  // This compute node departs: dead in the membership, then every table id on its region fenced.
  // Call after this node's clients have stopped issuing operations.
  void leave(Client<T>& c) {
    if (on_mn_ || left_.exchange(true)) return;
    change_membership(c, 0, bit_of(home_));
    refresh(c);
    fence_region(c, home_);
  }

  // --- geometry and ownership -------------------------------------------------------------------
  uint32_t table_words() const { return table_words_; }
  uint32_t table_bytes() const { return table_bytes_; }
  uint32_t payload_words() const { return payload_; }
  uint64_t max_tables() const { return max_tables_; }
  NodeId home() const { return home_; }
  bool on_memory_node() const { return on_mn_; }
  bool left() const { return left_.load(); }
  const Stats& stats() const { return stats_; }

  GlobalAddress table_addr(NodeId node, uint64_t id) const {
    if (on_mn_) return GlobalAddress::from_raw(area_) + id * table_bytes_;
    return GlobalAddress(node, area_ + id * table_bytes_);
  }
  GlobalAddress lock_addr(NodeId node, uint64_t id) const {
    return table_addr(node, id) + (table_bytes_ - 8);
  }
  // Lock-free (twice on every DMTree search): every ring built stays in rings_ for the life of
  // the service, so the one `current_ring_` names is never freed under a reader; refresh()
  // swaps the pointer under mu_.
  NodeId owner(uint64_t id) const {
    if (on_mn_) return mem0_;
    const Ring* r = current_ring_.load(std::memory_order_acquire);
    if (!r || r->empty()) throw Error("collab: no live compute node");
    return r->owner(id);
  }
  uint64_t epoch() const {
    std::shared_lock l(mu_);
    return epoch_;
  }
  bool live(NodeId n) const {
    std::shared_lock l(mu_);
    return n < 48 && (mask_ >> n & 1);
  }
  // Whether this node should keep cached copies of table `id` (it is not the primary).
  bool caches(uint64_t id) const { return !on_mn_ && owner(id) != home_; }

  // Re-reads the membership word (one memory-node READ) and any log entries not yet known.
  bool refresh(Client<T>& c) {
    if (on_mn_) return false;
    stats_.refreshes.fetch_add(1, std::memory_order_relaxed);
    uint64_t w = c.template read_value<uint64_t>(membership_, opts_.membership_read_hint);
    uint64_t e = w >> 48;
    std::vector<uint64_t> masks;
    {
      std::shared_lock l(mu_);
      if (e <= epoch_) return false;
      masks = masks_;
    }
    if (e >= max_epochs_) throw LimitError("collab: membership log full (raise max_epochs)");
    while (masks.size() <= e) {
      uint64_t v = 0;
      while (!((v = c.template read_value<uint64_t>(log_ + 8 * masks.size(),
                                                    opts_.membership_read_hint)) &
               kLogWritten))
        c.pause();
      masks.push_back(v & ~kLogWritten);
    }
    std::unique_lock l(mu_);
    if (e <= epoch_) return false;
    masks_ = std::move(masks);
    epoch_ = e;
    mask_ = masks_[e];
    ring_ = ring_for(mask_);
    current_ring_.store(ring_.get(), std::memory_order_release);
    return true;
  }

  // --- table ids ---------------------------------------------------------------------------------
  uint64_t alloc_id(Client<T>& c) {
    {
      std::lock_guard l(id_mu_);
      if (!ids_.empty()) return take_id();
    }
    uint64_t start = c.faa(counter_, opts_.id_chunk);
    if (start >= max_tables_)
      throw PoolExhausted(
          "collab: all " + std::to_string(max_tables_) +
          " tables are in use (give compute nodes larger regions or raise max_tables)");
    std::lock_guard l(id_mu_);
    ids_.emplace_back(start, std::min<uint64_t>(start + opts_.id_chunk, max_tables_));
    return take_id();
  }

  // --- access
  // ------------------------------------------------------------------------------------- Locks the
  // primary copy of `id` and reads it into img (table_words words; lock word = ours). Returns the
  // owner node. `rebuild(Client&, id, payload*, uint32_t& version, uint8_t& flags)` recomputes the
  // payload from memory-node data when the table is taken over or recovered.
  template <class Rebuild>
  NodeId lock_primary(Client<T>& c, uint64_t id, uint64_t* img, Rebuild&& rebuild) {
    const uint64_t mine = kHeld | uint64_t{home_} << 32 | c.id();
    uint32_t tries = 0;
    for (;;) {
      NodeId o = owner(id);
      uint64_t old = 0;
      Batch b;
      b.cas(lock_addr(o, id), 0, mine, &old);
      b.read(table_addr(o, id), img, table_bytes_ - 8).hint(opts_.table_read_hint);
      c.run(b);
      bool need_rebuild = false;
      if (old == 0) {
      } else if (old & kMoved) {
        stats_.moved_seen.fetch_add(1, std::memory_order_relaxed);
        refresh(c);
        if (owner(id) != o) continue;
        if (c.cas(lock_addr(o, id), old, mine) != old) continue;
        need_rebuild = true;
      } else {
        stats_.lock_retries.fetch_add(1, std::memory_order_relaxed);
        if (++tries % opts_.liveness_check_every == 0 && holder_dead(c, old)) {
          if (c.cas(lock_addr(o, id), old, mine) != old) continue;
          stats_.recovered_locks.fetch_add(1, std::memory_order_relaxed);
          need_rebuild = true;
        } else {
          c.pause();
          continue;
        }
      }
      img[table_words_ - 1] = mine;
      if (!need_rebuild && (!verify_table(img, payload_) || !(table_flags(img) & kPrimary)))
        need_rebuild = true;
      if (need_rebuild && !take_over(c, id, o, img, rebuild)) continue;  // o no longer owns id
      return o;
    }
  }

  // Reads the primary copy (whole table, lock word included) without locking. With
  // wait_unlocked, returns only an image read while no writer held the lock. A copy found
  // invalid is taken over (lock, rebuild, write back) and read again.
  template <class Rebuild>
  NodeId read_primary(Client<T>& c, uint64_t id, uint64_t* img, bool wait_unlocked,
                      Rebuild&& rebuild) {
    uint32_t tries = 0, torn = 0;
    for (;;) {
      NodeId o = owner(id);
      c.read(table_addr(o, id), img, table_bytes_, opts_.table_read_hint);
      uint64_t lw = img[table_words_ - 1];
      if (lw & kMoved) {
        stats_.moved_seen.fetch_add(1, std::memory_order_relaxed);
        if (!refresh(c) && owner(id) == o) repair(c, id, img, rebuild);
        continue;
      }
      bool ok = verify_table(img, payload_);
      if (ok && !(table_flags(img) & kPrimary)) {  // a cached copy where the primary should be
        repair(c, id, img, rebuild);
        continue;
      }
      if (lock_held(lw) && (!ok || wait_unlocked)) {
        if (++tries % opts_.liveness_check_every == 0 && holder_dead(c, lw))
          repair(c, id, img, rebuild);
        else
          c.pause();
        continue;
      }
      if (!ok) {
        stats_.torn_reads.fetch_add(1, std::memory_order_relaxed);
        if (++torn >= 4)
          repair(c, id, img, rebuild);
        else
          c.pause();
        continue;
      }
      return o;
    }
  }

  // This node's copy (primary or cached) of `id`; false when it is absent or torn.
  bool read_local(Client<T>& c, uint64_t id, uint64_t* img) {
    c.read(table_addr(home_, id), img, table_bytes_);
    return verify_table(img, payload_);
  }
  // Stores img as this node's cached copy (kPrimary clear; the lock word is never written).
  void store_local(Client<T>& c, uint64_t id, uint64_t* img) {
    if (!caches(id)) return;
    uint32_t v = table_version(img);
    uint8_t f = static_cast<uint8_t>(table_flags(img) & ~kPrimary);
    seal_table(img, payload_, v, f);
    c.write(table_addr(home_, id), img, table_bytes_ - 8);
  }
  // Writes img as the primary and releases the lock in the same WRITE (embedded unlock).
  void write_unlock(Client<T>& c, NodeId o, uint64_t id, uint64_t* img, uint32_t version,
                    uint8_t flags) {
    seal_table(img, payload_, version, static_cast<uint8_t>(flags | kValid | kPrimary));
    img[table_words_ - 1] = 0;
    c.release(table_addr(o, id), img, table_bytes_, LockWord::kLast, opts_.table_write_hint);
  }
  // Releases the lock alone (the payload did not change).
  void unlock(Client<T>& c, NodeId o, uint64_t id) {
    static const uint64_t kZero = 0;
    c.release(lock_addr(o, id), &kZero, 8);
  }
  // A table nobody can reach yet: written as primary, lock word untouched.
  void write_new(Client<T>& c, uint64_t id, uint64_t* img, uint32_t version, uint8_t flags) {
    seal_table(img, payload_, version, static_cast<uint8_t>(flags | kValid | kPrimary));
    c.write(table_addr(owner(id), id), img, table_bytes_ - 8, opts_.table_write_hint);
  }

 private:
  Service(Client<T>& c, const Options& o)
      : opts_(o),
        home_(c.home_node()),
        payload_(o.payload_words),
        table_words_(o.payload_words + 2),
        table_bytes_(8 * (o.payload_words + 2)) {
    auto m = c.memory_nodes();
    if (m.empty()) throw ConfigError("collab: the cluster has no memory node");
    mem0_ = m.front();
    for (unsigned s : {o.membership_slot, o.counter_slot, o.descriptor_slot})
      if (s >= layout::kRootSlots) throw ConfigError("collab: root slot out of range");
    if (o.vnodes == 0 || o.id_chunk == 0 || o.liveness_check_every == 0 || o.max_epochs < 4)
      throw ConfigError(
          "collab: vnodes, id_chunk, liveness_check_every must be > 0, max_epochs >= 4");
    membership_ = layout::root_slot(mem0_, o.membership_slot);
    counter_ = layout::root_slot(mem0_, o.counter_slot);
  }

  static uint64_t bit_of(NodeId n) {
    if (n >= 48)
      throw ConfigError("collab: compute node ids must be < 48, got " + std::to_string(n));
    return uint64_t{1} << n;
  }

  // Same offset on every compute node: above every node's bump word, then each bump word is
  // advanced past the area (CAS, so a concurrent allocation is never overlapped).
  static std::pair<uint64_t, uint64_t> reserve_area(Client<T>& c, uint64_t table_bytes,
                                                    uint64_t cap) {
    std::vector<NodeId> cns;
    for (size_t n = 0; n < c.node_count(); ++n)
      if (c.role(static_cast<NodeId>(n)) == NodeRole::kCompute)
        cns.push_back(static_cast<NodeId>(n));
    for (int attempt = 0; attempt < 16; ++attempt) {
      uint64_t base = 0, limit = ~uint64_t{0};
      for (NodeId n : cns) {
        base = std::max(base, c.template read_value<uint64_t>(layout::bump_word(n)));
        limit = std::min(limit, c.region_bytes(n));
      }
      base = (base + 4095) & ~uint64_t{4095};
      if (base + table_bytes * 16 > limit)
        throw PoolExhausted("collab: compute-node regions have no room for the table area");
      uint64_t tables = (limit - base) / table_bytes;
      if (cap) tables = std::min(tables, cap);
      uint64_t end = base + tables * table_bytes;
      bool ok = true;
      for (NodeId n : cns) {
        uint64_t cur = c.template read_value<uint64_t>(layout::bump_word(n));
        if (cur > base || c.cas(layout::bump_word(n), cur, end) != cur) {
          ok = false;
          break;
        }
      }
      if (ok) return {base, tables};
    }
    throw Error("collab: could not reserve the table area (compute-node heaps keep moving)");
  }

  void load_descriptor(Client<T>& c) {
    // Written by create() on another host, perhaps: always seen from memory.
    uint64_t draw = c.template read_value<uint64_t>(layout::root_slot(mem0_, opts_.descriptor_slot),
                                                    FlushHint::kInvalidate);
    if (draw == 0) throw ConfigError("collab: no service descriptor (create it first)");
    uint64_t d[8];
    c.read(GlobalAddress::from_raw(draw), d, sizeof(d), FlushHint::kInvalidate);
    if (d[0] != kDescMagic) throw ConfigError("collab: bad service descriptor");
    if (d[3] != table_words_)
      throw ConfigError("collab: table geometry mismatch (" + std::to_string(d[3]) + " words vs " +
                        std::to_string(table_words_) + ")");
    area_ = d[1];
    max_tables_ = d[2];
    log_ = GlobalAddress::from_raw(d[4]);
    max_epochs_ = d[5];
    vnodes_ = static_cast<unsigned>(d[6]);
    on_mn_ = d[7] != 0;
  }

  void change_membership(Client<T>& c, uint64_t add, uint64_t remove) {
    for (;;) {
      uint64_t w = c.template read_value<uint64_t>(membership_, opts_.membership_read_hint);
      uint64_t e = (w >> 48) + 1;
      if (e >= max_epochs_) throw LimitError("collab: membership log full (raise max_epochs)");
      uint64_t mask = ((w & ((uint64_t{1} << 48) - 1)) | add) & ~remove;
      uint64_t nw = e << 48 | mask;
      if (c.cas(membership_, w, nw) != w) continue;
      uint64_t entry = mask | kLogWritten;
      c.write(log_ + 8 * e, &entry, 8);  // written back by the caller's refresh() (Options)
      return;
    }
  }

  std::shared_ptr<const Ring> ring_for(uint64_t mask) {
    auto it = rings_.find(mask);
    if (it != rings_.end()) return it->second;
    auto r = std::make_shared<const Ring>(mask, vnodes_);
    rings_[mask] = r;
    return r;
  }

  uint64_t take_id() {
    auto& r = ids_.front();
    uint64_t id = r.first++;
    if (r.first == r.second) ids_.pop_front();
    return id;
  }

  // The holder a held lock word names is gone: its process was declared dead and fenced (the
  // word's low 32 bits are its client id: Client::holder_dead, no verb), or its node left the
  // membership. Either way its table is rebuilt from the memory node's data by whoever steals
  // the lock.
  bool holder_dead(Client<T>& c, uint64_t w) {
    if (c.holder_dead(static_cast<uint32_t>(w))) return true;
    if (on_mn_) return false;
    refresh(c);
    return !live(holder_node(w));
  }

  // Fences every table id on the region of departed node `node` (CAS 0 -> MOVED, 32 per batch;
  // a held lock waits for its holder, or is stolen from a dead one), so that peers with a stale
  // view learn the new one on first touch instead of writing to a dead copy.
  void fence_region(Client<T>& c, NodeId node) {
    uint64_t n = std::min(c.template read_value<uint64_t>(counter_, opts_.membership_read_hint),
                          max_tables_);
    for (uint64_t id0 = 0; id0 < n; id0 += 32) {
      uint64_t olds[32] = {};
      Batch b;
      uint64_t cnt = std::min<uint64_t>(32, n - id0);
      for (uint64_t i = 0; i < cnt; ++i)
        b.cas(lock_addr(node, id0 + i), 0, kMoved | owner(id0 + i), &olds[i]);
      c.run(b);
      for (uint64_t i = 0; i < cnt; ++i)
        if (lock_held(olds[i])) fence(c, node, id0 + i, owner(id0 + i));
    }
  }

  // Every node that owned `id` at some known epoch, except `current`.
  std::vector<NodeId> previous_owners(uint64_t id, NodeId current) {
    std::vector<NodeId> out;
    std::shared_lock l(mu_);
    uint64_t last_mask = 0;
    for (size_t e = 1; e < masks_.size(); ++e) {
      if (masks_[e] == 0 || masks_[e] == last_mask) continue;
      last_mask = masks_[e];
      auto it = rings_.find(masks_[e]);
      NodeId n = it != rings_.end() ? it->second->owner(id) : Ring(masks_[e], vnodes_).owner(id);
      if (n != current && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    }
    return out;
  }

  // CAS node p's copy of `id` from free to MOVED; waits for a live holder, steals from a dead one.
  void fence(Client<T>& c, NodeId p, uint64_t id, NodeId to) {
    uint32_t tries = 0;
    for (;;) {
      uint64_t old = c.cas(lock_addr(p, id), 0, kMoved | to);
      if (old == 0) {
        stats_.fences.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      if (old & kMoved) return;
      if (++tries % opts_.liveness_check_every == 0 && holder_dead(c, old)) {
        if (c.cas(lock_addr(p, id), old, kMoved | to) == old) {
          stats_.recovered_locks.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        continue;
      }
      c.pause();
    }
  }

  // Under the lock of the owner's copy: fence the others, rebuild from memory, write as primary
  // (lock kept). False when the refreshed view shows that `o` no longer owns `id`: the copy we
  // locked is fenced towards the current owner and the caller starts again there. Without that,
  // a client with a stale view that locked the old owner's copy would fence the current owner's
  // copy while a client with the current view, holding that copy, fences ours: each waits for a
  // live holder forever (seen with 4 to 6 compute nodes joining during a load).
  template <class Rebuild>
  bool take_over(Client<T>& c, uint64_t id, NodeId o, uint64_t* img, Rebuild&& rebuild) {
    if (!on_mn_) {
      refresh(c);
      NodeId now = owner(id);
      if (now != o) {
        uint64_t moved = kMoved | now;  // we hold this copy's lock: a plain write hands it on
        c.release(lock_addr(o, id), &moved, 8);
        return false;
      }
      for (NodeId p : previous_owners(id, o)) fence(c, p, id, o);
    }
    uint32_t version = 0;
    uint8_t flags = 0;
    rebuild(c, id, img + 1, version, flags);
    seal_table(img, payload_, version, static_cast<uint8_t>(flags | kValid | kPrimary));
    c.write(table_addr(o, id), img, table_bytes_ - 8, opts_.table_write_hint);
    stats_.takeovers.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // Takes over an unusable primary copy for a reader: lock (which rebuilds), then release.
  template <class Rebuild>
  void repair(Client<T>& c, uint64_t id, uint64_t* img, Rebuild&& rebuild) {
    NodeId o = lock_primary(c, id, img, rebuild);
    unlock(c, o, id);
  }

  Options opts_;
  NodeId home_;
  NodeId mem0_ = 0;
  uint32_t payload_, table_words_, table_bytes_;
  GlobalAddress membership_, counter_, log_;
  uint64_t area_ = 0, max_tables_ = 0, max_epochs_ = 0;
  unsigned vnodes_ = 64;
  bool on_mn_ = false;
  std::atomic<bool> left_{false};

  mutable std::shared_mutex mu_;  // never held across a verb
  uint64_t epoch_ = 0, mask_ = 0;
  std::vector<uint64_t> masks_{0};
  std::map<uint64_t, std::shared_ptr<const Ring>> rings_;
  std::shared_ptr<const Ring> ring_;
  std::atomic<const Ring*> current_ring_{nullptr};  // ring_, for lock-free owner()

  std::mutex id_mu_;  // never held across a verb
  std::deque<std::pair<uint64_t, uint64_t>> ids_;
  Stats stats_;
};

}  // namespace dmrt::collab
