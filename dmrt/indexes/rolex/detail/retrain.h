// ROLEX retraining (§3.5): merge LT+SLT into a new model, install by model-pointer swap; the MN
// service.
#pragma once

#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "dmrt/indexes/common/root_slots.h"
#include "dmrt/indexes/rolex/detail/options.h"
#include "dmrt/indexes/rolex/detail/remote.h"
#include "dmrt/runtime/liveness.h"
#include "dmrt/runtime/service.h"
#include "dmrt/runtime/service_claim.h"

namespace dmrt::rolex {

namespace detail {

// Reads every chain of a model (tables in `m`) and returns its leaves in key order. Leaves are
// re-read until their checksums validate; with `strict` a leaf whose `next` disagrees with the
// tables fails the snapshot (the tables moved on: caller re-reads them).
template <Transport T>
bool snapshot_leaves(Client<T>& c, const Remote& r, const ModelImage& m, bool strict,
                     std::vector<ChainLink>& links, std::vector<Leaf>& leaves,
                     FlushHint hint = FlushHint::kNone) {
  links.clear();
  std::vector<ChainLink> chain;
  for (uint64_t e : m.lt) {
    if (!walk_chain(entry::unlocked(e) | entry::kValid, m.slt.data(), chain)) return false;
    links.insert(links.end(), chain.begin(), chain.end());
  }
  leaves.assign(links.size(), Leaf(r.geo));
  std::vector<size_t> todo(links.size());
  for (size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  for (int round = 0; !todo.empty(); ++round) {
    if (round > 10000) throw TransportError("rolex: leaf checksums never validate (corrupt leaf?)");
    MultiBatch mb;
    for (size_t i : todo) mb.read(r.leaf(links[i].leaf), leaves[i].data(), r.geo.bytes(), hint);
    mb.run(c);
    std::vector<size_t> again;
    for (size_t i : todo)
      if (!leaves[i].valid())
        again.push_back(i);
      else if (strict && leaves[i].next() != links[i].next)
        return false;
    todo.swap(again);
    if (!todo.empty()) c.pause();
  }
  return true;
}

// New trained leaves: the non-empty leaves in key order (a lone leaf when all are empty).
inline void plan_leaves(const std::vector<ChainLink>& links, const std::vector<Leaf>& leaves,
                        std::vector<uint64_t>& numbers, std::vector<std::vector<Key>>& keys) {
  numbers.clear();
  keys.clear();
  for (size_t i = 0; i < links.size(); ++i) {
    if (leaves[i].count() == 0) continue;
    numbers.push_back(links[i].leaf);
    std::vector<Key> ks;
    for (uint32_t s = 0; s < leaves[i].count(); ++s) ks.push_back(leaves[i].key(s));
    keys.push_back(std::move(ks));
  }
  if (numbers.empty()) {
    numbers.push_back(links.front().leaf);
    keys.emplace_back();
  }
}

// Training is CPU work. On shm and verbs it takes real time by itself; a transport whose clock sees
// only the CPU time it is told about (sim: Endpoint::charge_cpu, charged to the retrainer's node)
// is told here, `ns_per_key` for each key trained.
template <Transport T>
void charge_training(Client<T>& c, const std::vector<std::vector<Key>>& keys, uint64_t ns_per_key) {
  if constexpr (requires(uint64_t ns) { c.endpoint().charge_cpu(ns); }) {
    uint64_t n = 0;
    for (const auto& k : keys) n += k.size();
    if (n && ns_per_key) c.endpoint().charge_cpu(n * ns_per_key);
  } else {
    (void)c, (void)keys, (void)ns_per_key;
  }
}

template <Transport T>
bool read_model(Client<T>& c, GlobalAddress addr, ModelImage& out,
                FlushHint hint = FlushHint::kNone) {
  ModelHeader h;
  c.read(addr, &h, sizeof(h), hint);
  if (h.magic != kModelMagic) return false;
  std::vector<uint64_t> w(model_bytes(h.leaves, h.segments) / 8);
  c.read(addr, w.data(), static_cast<uint32_t>(w.size() * 8), hint);
  out = ModelImage::parse(w.data());
  return true;
}

}  // namespace detail

struct RetrainOutcome {
  bool done = false;        // a new model was installed
  bool optimistic = false;  // the model trained before locking was still exact (no retrain)
  bool taken_over = false;  // a dead retrainer's retraining, finished by this client
  uint64_t leaves = 0, segments = 0;
};

// Retrains model group `g` (any client: the memory-node service, or a compute node as fallback).
//  1. snapshot the chains without locks and train on it (off the writers' path);
//  2. retire every LT entry (lock|retired by CAS, waiting for holders), which freezes the group;
//  3. re-read the chains; if they changed since 1, train again on the frozen state;
//  4. rewrite leaf headers whose chain successor changes, write the new model, swap the pointer.
// Only one retrainer per model object (its retrain_lock word); others return done = false.
// `train_ns_per_key`: the training CPU to charge on transports that need telling (sim). `h`: the
// flush points' hints (rolex::FlushPoint; all of them by default).
// `dead`: a retrain lock word whose holder's process was declared dead and fenced (issue 39):
// the lock is taken from exactly that word (one taker wins) and the retraining goes on from step
// 2 with what the dead one left. The entries it retired stay retired; the leaf headers it may
// have rewritten in step 4 no longer match the tables, which stay authoritative while the group
// is frozen, so the frozen snapshot does not hold the leaves to them.
template <Transport T>
RetrainOutcome retrain_group(Client<T>& c, const Remote& r, uint64_t g,
                             uint64_t train_ns_per_key = 0, const FlushHints& h = FlushHints::of(),
                             uint64_t dead = 0) {
  RetrainOutcome res;
  GlobalAddress addr =
      GlobalAddress::from_raw(c.template read_value<uint64_t>(r.group_ptr(g), h.model_read));
  const uint64_t mine = retrain_lock_word(c.process_tag());
  if (c.cas(addr + kRetrainLockOffset, dead, mine) != dead) return res;
  res.taken_over = dead != 0;
  ModelImage old;
  if (!detail::read_model(c, addr, old, h.model_read))
    throw TransportError("rolex: bad model object for group " + std::to_string(g));
  const uint32_t slots = r.geo.slots;
  const Key group_lo = old.boundaries.front();

  std::vector<ChainLink> links;
  std::vector<Leaf> leaves;
  std::vector<uint64_t> numbers;
  std::vector<std::vector<Key>> keys;
  ModelImage fresh;
  bool trained = false;
  if (detail::snapshot_leaves(c, r, old, false, links, leaves, h.leaf_read)) {
    detail::plan_leaves(links, leaves, numbers, keys);
    train_group(fresh, keys, group_lo, static_cast<uint32_t>(r.meta.epsilon), slots);
    detail::charge_training(c, keys, train_ns_per_key);
    trained = true;
  }

  // Retire: lock|retired on every LT entry, naming this process. An entry already retired was
  // retired by the dead retrainer whose lock this one took. A writer's lock is waited for; one
  // whose process died holding it is an error naming it (its chain may be half changed).
  GlobalAddress lt_addr = addr + kLtOffset;
  std::vector<uint64_t> cur(old.lt.size());
  c.read(lt_addr, cur.data(), static_cast<uint32_t>(cur.size() * 8), h.table_read);
  std::vector<size_t> todo;
  for (size_t j = 0; j < cur.size(); ++j)
    if (!entry::retired(cur[j])) todo.push_back(j);
  std::vector<HolderWatch> watches(cur.size());
  const uint64_t retire_bits = entry::kLock | entry::kRetired | entry::holder_bits(c.process_tag());
  while (!todo.empty()) {
    MultiBatch mb;
    std::vector<uint64_t> seen(todo.size());
    std::vector<size_t> tried;
    for (size_t i = 0; i < todo.size(); ++i) {
      size_t j = todo[i];
      if (entry::locked(cur[j])) {
        if (watches[j].dead_tag(c, cur[j], entry::holder(cur[j])))
          throw Error("rolex: retraining group " + std::to_string(g) +
                      ": a writer of process tag " + std::to_string(entry::holder(cur[j])) +
                      " died holding one of its chains' locks");
        continue;
      }
      tried.push_back(i);
      mb.cas(lt_addr + 8 * j, cur[j], cur[j] | retire_bits, &seen[i]);
    }
    mb.run(c);
    std::vector<size_t> again;
    std::vector<bool> tried_ok(todo.size(), false);
    for (size_t i : tried)
      if (seen[i] == cur[todo[i]]) tried_ok[i] = true;
    bool waiting = false;
    for (size_t i = 0; i < todo.size(); ++i) {
      if (tried_ok[i]) continue;
      again.push_back(todo[i]);
      waiting = true;
    }
    todo.swap(again);
    if (waiting) {
      c.pause();
      for (size_t j : todo) cur[j] = c.template read_value<uint64_t>(lt_addr + 8 * j, h.table_read);
    }
  }
  for (size_t j = 0; j < cur.size(); ++j) cur[j] = entry::unlocked(cur[j]);  // what a thaw restores
  // Frozen: the tables and chains no longer change.
  ModelImage frozen;
  detail::read_model(c, addr, frozen, h.model_read);
  std::vector<ChainLink> links2;
  std::vector<Leaf> leaves2;
  if (!detail::snapshot_leaves(c, r, frozen, dead == 0, links2, leaves2, h.leaf_read))
    throw TransportError("rolex: frozen group " + std::to_string(g) + " has inconsistent chains");
  std::vector<uint64_t> numbers2;
  std::vector<std::vector<Key>> keys2;
  detail::plan_leaves(links2, leaves2, numbers2, keys2);
  if (trained && numbers2 == numbers && keys2 == keys) {
    res.optimistic = true;
  } else {
    fresh = ModelImage{};
    train_group(fresh, keys2, group_lo, static_cast<uint32_t>(r.meta.epsilon), slots);
    detail::charge_training(c, keys2, train_ns_per_key);
  }
  // The new model: every non-empty leaf is a trained leaf with no synonyms.
  fresh.hdr = old.hdr;
  fresh.hdr.leaves = numbers2.size();
  fresh.hdr.segments = fresh.segments.size();
  fresh.hdr.generation = old.hdr.generation + 1;
  fresh.hdr.retrain_lock = 0;
  fresh.slt.assign(kSltSlots, 0);
  fresh.slt[0] = 1;  // slot_use: next free SLT slot
  fresh.lt.clear();
  for (uint64_t n : numbers2) fresh.lt.push_back(entry::make(n, 0));
  // The new model's memory first: when the pool is exhausted nothing has changed yet, so the
  // group thaws (LT entries and the retrain lock as they were) and writers see the error rather
  // than a group frozen for ever.
  std::vector<uint64_t> words = fresh.serialize();
  GlobalAddress naddr;
  try {
    naddr = c.alloc_on(r.node, words.size() * 8);
  } catch (...) {
    try {
      MultiBatch thaw;
      for (size_t j = 0; j < cur.size(); ++j) thaw.release(lt_addr + 8 * j, &cur[j], 8);
      thaw.run(c);
      uint64_t free_word = 0;
      c.release(addr + kRetrainLockOffset, &free_word, 8);
    } catch (...) {  // the transport failed: the original error is the one to report
    }
    throw;
  }
  // Leaf headers: successor slot becomes 0.
  MultiBatch mb;
  for (size_t i = 0; i < links2.size(); ++i) {
    if (leaves2[i].next() == 0 || leaves2[i].count() == 0) continue;
    leaves2[i].set_next(0);
    leaves2[i].seal();
    mb.write(r.leaf(links2[i].leaf), leaves2[i].data(), r.geo.bytes(), h.leaf_write);
  }
  mb.run(c);
  write_words(c, naddr, words, h.model_write);
  uint64_t raw = naddr.raw();
  Batch b;
  b.write(r.group_ptr(g), &raw, 8).hint(h.model_write).faa(r.counter(kMetaRetrainings), 1);
  c.run(b);
  res.done = true;
  res.leaves = fresh.lt.size();
  res.segments = fresh.segments.size();
  return res;
}

struct ServiceOptions {
  unsigned root_slot = root_slots::kRolex;  // where the index publishes its meta on this node
  uint64_t idle_sleep_us = 100;  // real-time transports: sleep when the queue is empty (sim: 0)
  // Training CPU per key, charged only where the clock needs telling (sim). train_group at -O2
  // measured 45-70 ns per key (16-slot leaves, 64-256 leaves per group) on the shared dev VM; the
  // paper's Fig. 11d reports ~300 us for 128 leaves (~150 ns per key) on one memory-node core.
  uint64_t train_ns_per_key = 60;
  // Test-only (DMRT_FAULT_INJECTION builds): as rolex::Options::faults, for the service's verbs.
  struct Faults {
    FlushPoints<FlushPoint> skip_flush;  // these flush points issue no hint (tests/coherence)
  } faults;
};

// The retraining service body (§3.5): polls CirQ, keeps pending groups, retrains the one whose SLT
// is fullest first, installs by pointer swap. Runs on any transport's ServiceHost; one fiber
// works (fiber 0), the others return at once. Waits for the index's meta to be published.
template <Transport T>
void retrain_service(ServiceContext<T>& ctx, ServiceOptions so = {}) {
  if (ctx.fiber() != 0) return;
  Client<T>& c = ctx.client();
  Remote r;
  auto idle = [&] {
    c.pause();
    if (so.idle_sleep_us) std::this_thread::sleep_for(std::chrono::microseconds(so.idle_sleep_us));
  };
  while (!Remote::load(c, ctx.node(), so.root_slot, r)) {
    if (ctx.stop_requested()) return;
    idle();
  }
  // One retrainer per index (the CirQ has one consumer): a second host is refused while this
  // one's heartbeat advances; a clean stop frees the claim at once.
  ServiceClaim<T> claim(
      r.cirq_owner(), "the ROLEX retraining service at root slot " + std::to_string(so.root_slot));
  if (!claim.acquire(c, [&] { return ctx.stop_requested(); })) return;
  // The head is this service's own word, read again only by a host that takes the service over:
  // always from memory, and always written back (a stale head would stop the drain at an entry
  // already consumed).
  uint64_t head = c.template read_value<uint64_t>(r.cirq_head(), FlushHint::kInvalidate);
  std::set<uint64_t> pending;
  const FlushHints hints = FlushHints::of(so.faults.skip_flush);
  while (!ctx.stop_requested()) {
    claim.beat(c);
    // Drain CirQ.
    for (;;) {
      GlobalAddress slot = r.cirq_entry(head);
      uint64_t e = c.template read_value<uint64_t>(slot, hints.queue_read);
      if (e == 0) break;
      c.cas(slot, e, 0);  // only this fiber consumes
      ++head;
      c.write(r.cirq_head(), &head, 8, FlushHint::kWriteBack);
      if (e - 1 < r.meta.groups) pending.insert(e - 1);
    }
    if (pending.empty()) {
      idle();
      continue;
    }
    // Priority: fullest SLT first.
    uint64_t best = *pending.begin(), best_use = 0;
    for (uint64_t g : pending) {
      GlobalAddress m = GlobalAddress::from_raw(
          c.template read_value<uint64_t>(r.group_ptr(g), hints.model_read));
      uint64_t use = c.template read_value<uint64_t>(m + kSltOffset, hints.table_read);
      if (use > best_use) best_use = use, best = g;
    }
    pending.erase(best);
    retrain_group(c, r, best, so.train_ns_per_key, hints);
  }
  claim.release(c);  // a clean stop: a later host need not wait for the lease
}

}  // namespace dmrt::rolex
