// Remote allocator: chunks claimed by FAA on a node's bump word, carved locally; no memory-node
// CPU.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"

namespace dmrt {

struct AllocatorOptions {
  uint64_t chunk_bytes = uint64_t{1} << 20;  // claimed from a node per FAA
  // Freed blocks wait in a FIFO until this many more frees of their size arrive, so a reader that
  // still holds a stale pointer very rarely sees the block reused (indexes validate anyway).
  uint32_t reuse_delay = 256;
};

// One per client; not thread-safe (a client is one fiber). Blocks are never handed out twice: a
// chunk is owned by the client whose FAA claimed it, and the bump word only grows, so an FAA
// past the end of a region is wasted but never overlaps. Exhaustion throws PoolExhausted.
class RemoteAllocator {
 public:
  static constexpr uint64_t kMinAlign = 8;
  static constexpr uint64_t kClassGranule = 64;
  static constexpr size_t kClasses = 64;  // free lists for blocks up to 4 KiB, by 64 B

  RemoteAllocator(std::vector<NodeId> memory_nodes, AllocatorOptions opts, uint32_t seed)
      : nodes_(std::move(memory_nodes)), opts_(opts), next_node_(seed % nodes_.size()) {}

  // `bytes` is rounded up to `align` (a power of two, at most 4096). Tries every memory node,
  // starting with this client's turn in round-robin, before giving up.
  template <class C>
  GlobalAddress allocate(C& client, uint64_t bytes, uint64_t align = 64) {
    bytes = round_up(bytes, align);
    if (auto b = reuse(bytes); b) return b;
    for (size_t tried = 0; tried < nodes_.size(); ++tried) {
      NodeId n = nodes_[(next_node_ + tried) % nodes_.size()];
      if (auto b = allocate_on(client, n, bytes, align); b) {
        next_node_ = (next_node_ + tried) % nodes_.size();
        return b;
      }
    }
    throw PoolExhausted("memory pool exhausted: no memory node has " + std::to_string(bytes) +
                        " free bytes left (give the memory nodes larger regions)");
  }

  // Allocation on one node; null when that node is exhausted.
  template <class C>
  GlobalAddress allocate_on(C& client, NodeId node, uint64_t bytes, uint64_t align = 64) {
    bytes = round_up(bytes, align);
    Chunk& c = chunk_for(node);
    uint64_t start = round_up(c.next, align);
    if (start + bytes > c.end) {
      uint64_t want = std::max(opts_.chunk_bytes, bytes + align);
      uint64_t limit = client.region_bytes(node);
      uint64_t old = client.faa(layout::bump_word(node), want);
      if (old >= limit) return GlobalAddress::null();
      uint64_t end = std::min(old + want, limit);
      c.next = old;
      c.end = end;
      claimed_ += end - old;
      start = round_up(c.next, align);
      if (start + bytes > c.end) return GlobalAddress::null();
    }
    c.next = start + bytes;
    return GlobalAddress(node, start);
  }

  // Returns a block to this client's free lists (blocks above 4 KiB are not recycled).
  void free(GlobalAddress addr, uint64_t bytes) {
    if (!addr) return;
    size_t cls = round_up(bytes, kClassGranule) / kClassGranule;
    if (cls >= kClasses) return;
    free_[cls].push_back(addr);
  }

  uint64_t claimed_bytes() const { return claimed_; }

  static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

 private:
  struct Chunk {
    NodeId node;
    uint64_t next = 0, end = 0;
  };
  Chunk& chunk_for(NodeId n) {
    for (auto& c : chunks_)
      if (c.node == n) return c;
    chunks_.push_back({n});
    return chunks_.back();
  }
  GlobalAddress reuse(uint64_t bytes) {
    if (bytes % kClassGranule) return {};
    size_t cls = bytes / kClassGranule;
    if (cls >= kClasses || free_[cls].size() <= opts_.reuse_delay) return {};
    GlobalAddress a = free_[cls].front();
    free_[cls].pop_front();
    return a;
  }

  std::vector<NodeId> nodes_;
  AllocatorOptions opts_;
  size_t next_node_;
  std::vector<Chunk> chunks_;
  std::array<std::deque<GlobalAddress>, kClasses> free_;
  uint64_t claimed_ = 0;
};

}  // namespace dmrt
