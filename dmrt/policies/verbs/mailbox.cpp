// Two-sided messaging over verbs: a producer claims a slot of a remote mailbox ring with READ and
// CAS and fills it with WRITEs; the consumer pops its own node's rings locally.
#include "dmrt/policies/verbs/cluster_internal.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/messaging.h"

namespace dmrt::verbs {

namespace {

constexpr uint64_t kRingTail = MailboxRing::kTailOffset;
constexpr uint64_t kRingSlots = MailboxRing::kSlotsOffset;
constexpr uint64_t kSlotHeader = MailboxRing::kSlotHeader;

}  // namespace

bool Endpoint::try_send(NodeId node, uint32_t mailbox, const MessageHeader& h,
                        std::span<const std::byte> payload) {
  const MailboxGeometry& g = mailbox_geometry();
  if (node >= node_count())
    throw AddressError("message to node " + std::to_string(node) + ", but the cluster has " +
                       std::to_string(node_count()) + " nodes");
  if (mailbox >= g.mailboxes)
    throw AddressError("mailbox " + std::to_string(mailbox) + " does not exist (nodes have " +
                       std::to_string(g.mailboxes) + ")");
  if (payload.size() > MailboxRing::max_payload(g))
    throw LimitError("message of " + std::to_string(payload.size()) +
                     " bytes exceeds the mailbox slot payload of " +
                     std::to_string(MailboxRing::max_payload(g)) +
                     " bytes (raise mailbox.slot_bytes)");
  Counters& scratch = current(cluster_).mailbox_counters;
  uint64_t base = layout::mailbox_offset(g, mailbox);
  GlobalAddress tail{node, base + kRingTail};
  uint64_t pos = 0;
  {
    Batch b;
    b.read(tail, &pos, 8);
    execute(std::span<Batch>(&b, 1), scratch);
  }
  for (int tries = 0; tries < 64; ++tries) {
    uint64_t slot = base + kRingSlots + (pos & (g.slots - 1)) * g.slot_bytes;
    uint64_t seq = 0;
    {
      Batch b;
      b.read({node, slot}, &seq, 8);
      execute(std::span<Batch>(&b, 1), scratch);
    }
    int64_t dif = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
    if (dif < 0) return false;  // full
    if (dif > 0) {              // another producer took it: look at the tail again
      Batch b;
      b.read(tail, &pos, 8);
      execute(std::span<Batch>(&b, 1), scratch);
      continue;
    }
    uint64_t old = 0;
    {
      Batch b;
      b.cas(tail, pos, pos + 1, &old);
      execute(std::span<Batch>(&b, 1), scratch);
    }
    if (old != pos) {
      pos = old;
      continue;
    }
    std::vector<std::byte> body(kSlotHeader - 8 + payload.size());
    uint64_t w1 = uint64_t{h.from_node} | (uint64_t{h.reply_mailbox} << 32);
    uint64_t w2 = uint64_t{h.tag} | (uint64_t{payload.size()} << 32);
    std::memcpy(body.data(), &w1, 8);
    std::memcpy(body.data() + 8, &w2, 8);
    std::memcpy(body.data() + 16, &h.request_id, 8);
    if (!payload.empty()) std::memcpy(body.data() + 24, payload.data(), payload.size());
    uint64_t publish = pos + 1;
    Batch b;
    b.write({node, slot + 8}, body.data(), static_cast<uint32_t>(body.size()));
    b.write({node, slot}, &publish, 8);  // after the body: RC executes WRITEs in order
    execute(std::span<Batch>(&b, 1), scratch);
    return true;
  }
  return false;
}

bool Endpoint::try_receive(uint32_t mailbox, Message& out) {
  const MailboxGeometry& g = mailbox_geometry();
  if (mailbox >= g.mailboxes)
    throw AddressError("mailbox " + std::to_string(mailbox) + " does not exist (nodes have " +
                       std::to_string(g.mailboxes) + ")");
  if (home_ != cluster_->self())
    throw TransportError("try_receive reads this process's own node's mailboxes only");
  MailboxRing ring(cluster_->local_region() + layout::mailbox_offset(g, mailbox), g);
  return ring.try_pop(out);
}

}  // namespace dmrt::verbs
