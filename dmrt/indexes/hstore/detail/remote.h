// HStore shared remote view: the meta block as read by clients and servers, status CAS, read
// rounds.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "dmrt/indexes/hstore/detail/layout.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/layout.h"

namespace dmrt::hstore {

// Where everything is, as the creator wrote it.
struct Meta {
  GlobalAddress addr;  // the meta block (on the HTS node)
  GlobalAddress table;
  uint64_t heads = 0, overflow = 0;
  NodeId hts_node = 0, sls_node = 0;
  unsigned logs = 0, partitions = 0, query_fibers = 0, ship_batch = 0;
  uint32_t hts_inbox = 0, hts_ctrl = 0, sls_inbox = 0, sls_ctrl = 0, ack_base = 0;
  uint64_t flags = 0, grace_ns = 0, apply_lag_ns = 0;
  GlobalAddress sls_stats;
  uint32_t key_size = 8;  // the longest key; 8: integer keys, else byte keys (records, wire)

  GlobalAddress word(uint32_t w) const { return addr + 8ull * w; }
  GlobalAddress status_word() const { return word(meta::kStatus); }
  GlobalAddress bucket(uint64_t i) const { return table + uint64_t{kBucketBytes} * i; }
  uint64_t buckets() const { return heads + overflow; }
  uint32_t ack_box(unsigned worker) const { return ack_base - worker; }
  bool sync() const { return flags & meta::kFlagSync; }
  bool wide() const { return key_size != kIntegerKeyBytes; }

  void parse(const uint64_t* w) {
    table = GlobalAddress::from_raw(w[meta::kTable]);
    heads = w[meta::kHeads];
    overflow = w[meta::kOverflow];
    hts_node = static_cast<NodeId>(w[meta::kNodes] & 0xffff);
    sls_node = static_cast<NodeId>((w[meta::kNodes] >> 16) & 0xffff);
    logs = static_cast<unsigned>((w[meta::kNodes] >> 32) & 0xffff);
    partitions = static_cast<unsigned>((w[meta::kNodes] >> 48) & 0xffff);
    hts_inbox = static_cast<uint32_t>(w[meta::kBoxes] & 0xffff);
    hts_ctrl = static_cast<uint32_t>((w[meta::kBoxes] >> 16) & 0xffff);
    sls_inbox = static_cast<uint32_t>((w[meta::kBoxes] >> 32) & 0xffff);
    sls_ctrl = static_cast<uint32_t>((w[meta::kBoxes] >> 48) & 0xffff);
    ack_base = static_cast<uint32_t>(w[meta::kGeometry] & 0xffff);
    query_fibers = static_cast<unsigned>((w[meta::kGeometry] >> 16) & 0xffff);
    ship_batch = static_cast<unsigned>((w[meta::kGeometry] >> 32) & 0xffff);
    key_size = static_cast<uint32_t>((w[meta::kGeometry] >> 48) & 0xffff);
    if (key_size == 0) key_size = 8;
    flags = w[meta::kFlags];
    grace_ns = w[meta::kGrace];
    apply_lag_ns = w[meta::kApplyLag];
    sls_stats = GlobalAddress::from_raw(w[meta::kSlsStats]);
  }
  void serialize(uint64_t* w) const {
    w[meta::kMagic] = kMetaMagic;
    w[meta::kTable] = table.raw();
    w[meta::kHeads] = heads;
    w[meta::kOverflow] = overflow;
    w[meta::kNodes] = uint64_t{hts_node} | (uint64_t{sls_node} << 16) | (uint64_t{logs} << 32) |
                      (uint64_t{partitions} << 48);
    w[meta::kBoxes] = uint64_t{hts_inbox} | (uint64_t{hts_ctrl} << 16) |
                      (uint64_t{sls_inbox} << 32) | (uint64_t{sls_ctrl} << 48);
    w[meta::kGeometry] = uint64_t{ack_base} | (uint64_t{query_fibers} << 16) |
                         (uint64_t{ship_batch} << 32) |
                         (uint64_t{key_size == 8 ? 0u : key_size} << 48);
    w[meta::kFlags] = flags;
    w[meta::kGrace] = grace_ns;
    w[meta::kApplyLag] = apply_lag_ns;
    w[meta::kSlsStats] = sls_stats.raw();
  }

  // Reads the meta through root slot `root_slot` of the first memory node; false when none is
  // published yet.
  template <Transport T>
  static bool load(Client<T>& c, unsigned root_slot, Meta& out) {
    auto mem = c.memory_nodes();
    if (mem.empty()) throw ConfigError("hstore: the cluster has no memory node");
    // Published by create() on another host, perhaps while this one polled: always from memory.
    uint64_t raw = c.template read_value<uint64_t>(layout::root_slot(mem.front(), root_slot),
                                                   FlushHint::kInvalidate);
    if (raw == 0) return false;
    std::vector<uint64_t> w(meta::kWords);
    c.read(GlobalAddress::from_raw(raw), w.data(), meta::kBytes, FlushHint::kInvalidate);
    if (w[meta::kMagic] != kMetaMagic) return false;
    out.addr = GlobalAddress::from_raw(raw);
    out.parse(w.data());
    return true;
  }
};

// `hint`: the reader's flush point (FlushPoint::kBucketInvalidate for clients,
// kServerInvalidate for the servers): the word changes only by CAS, at memory.
template <Transport T>
uint64_t read_status(Client<T>& c, const Meta& m, FlushHint hint = FlushHint::kNone) {
  return c.template read_value<uint64_t>(m.status_word(), hint);
}

// CAS loop on the status word: f(old) -> new. Returns the value installed.
template <Transport T, class F>
uint64_t update_status(Client<T>& c, const Meta& m, F&& f) {
  uint64_t cur = read_status(c, m);
  for (;;) {
    uint64_t next = f(cur);
    uint64_t seen = c.cas(m.status_word(), cur, next);
    if (seen == cur) return next;
    cur = seen;
  }
}

// Reads gathered into round trips of at most `per_trip` verbs, each trip's verbs grouped into
// one batch list per node and posted together (Client::run over several batches = one trip).
// Reusable: a ReadRounds kept between calls (a GET's handle) keeps its storage, so that a warm
// one allocates nothing (allocating its items and 2 KiB batches cost a GET on shm about 550
// instructions of malloc and free, callgrind, docs/results.md issue 20).
class ReadRounds {
 public:
  // `hint`: where a port to non-coherent memory flushes (FlushHint, hstore::FlushPoint).
  void read(GlobalAddress a, void* dst, uint32_t len, FlushHint hint = FlushHint::kNone) {
    items_.push_back({a, dst, len, hint});
  }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() { items_.clear(); }

  template <Transport T>
  void run(Client<T>& c, size_t per_trip) {
    per_trip = std::max<size_t>(1, per_trip);
    std::vector<Batch>& batches = batches_;
    for (size_t i = 0; i < items_.size(); i += per_trip) {
      batches.clear();
      size_t end = std::min(items_.size(), i + per_trip);
      for (size_t j = i; j < end; ++j) {
        const Item& it = items_[j];
        Batch* b = nullptr;
        for (auto& x : batches)
          if (x.node() == it.addr.node() && x.size() < Batch::kMaxVerbs) b = &x;
        if (!b) b = &batches.emplace_back();
        b->read(it.addr, it.dst, it.len).hint(it.hint);
      }
      c.run(std::span<Batch>(batches));
    }
    items_.clear();
  }

 private:
  struct Item {
    GlobalAddress addr;
    void* dst;
    uint32_t len;
    FlushHint hint;
  };
  std::vector<Item> items_;
  std::vector<Batch> batches_;  // run()'s, kept for their capacity
};

}  // namespace dmrt::hstore
