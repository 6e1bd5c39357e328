// Two-sided messaging: Message, and the shared-memory mailbox ring that shm and sim deliver
// through.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/cluster.h"

namespace dmrt {

// A received message. `reply_node/reply_mailbox` say where a response should go; `request_id`
// lets the caller match it (0 for one-way messages).
struct Message {
  NodeId from_node = 0;
  uint32_t reply_mailbox = 0;
  uint32_t tag = 0;
  uint64_t request_id = 0;
  std::vector<std::byte> payload;
};

struct MessageHeader {
  NodeId from_node = 0;
  uint32_t reply_mailbox = 0;
  uint32_t tag = 0;
  uint64_t request_id = 0;
};

// A bounded multi-producer multi-consumer ring (Vyukov's sequence-numbered slots) living inside a
// region, so producers in other threads or processes reach it through the same mapping. All
// cross-party synchronisation is on the per-slot sequence word; payload bytes are published by it.
class MailboxRing {
 public:
  // Byte offsets inside a mailbox, public so a transport can produce with one-sided verbs
  // (verbs: READ tail, READ sequence, CAS tail, WRITE body then sequence).
  static constexpr uint64_t kHeadOffset = 0;   // consumer position, own cache line
  static constexpr uint64_t kTailOffset = 64;  // producer position, own cache line
  static constexpr uint64_t kSlotsOffset = 128;
  // Slot: [sequence u64][from u16 | pad u16 | reply_mailbox u32][tag u32 | length u32]
  //       [request u64][payload]
  static constexpr uint64_t kSlotHeader = 32;

  MailboxRing(std::byte* base, const MailboxGeometry& g) : base_(base), g_(g) {}

  // Sets the sequence words; the creator of a region calls it once for every mailbox.
  static void format(std::byte* base, const MailboxGeometry& g);

  static size_t max_payload(const MailboxGeometry& g);

  // False when the ring is full. Throws LimitError when the payload cannot fit a slot.
  // The ring's words are untrusted (any writer of the region may have written them): every call
  // returns after a bounded number of steps whatever they hold. A push that meets a sequence word
  // no party can have written reports the ring full; the consumer repairs that slot.
  bool try_push(const MessageHeader& h, std::span<const std::byte> payload);
  // False when the ring is empty. A malformed slot (a length beyond the slot, or a sequence word
  // no party can have written) throws TransportError naming it, after the slot has been handed
  // back to the producers: the message is dropped, the ring keeps every slot, and the caller
  // counts it and goes on. Each one is also counted in malformed().
  bool try_pop(Message& out);

  // Malformed slots that try_pop has dropped, in this process, on every ring.
  static uint64_t malformed() { return malformed_.load(std::memory_order_relaxed); }

 private:
  std::byte* slot(uint64_t pos) const;
  bool repair(uint64_t pos, uint64_t seq);
  static inline std::atomic<uint64_t> malformed_{0};
  std::byte* base_;
  MailboxGeometry g_;
};

}  // namespace dmrt
