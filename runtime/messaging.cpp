#include "runtime/messaging.h"

#include <cstring>

#include "runtime/error.h"
#include "runtime/local_memory.h"

namespace dmrt {

size_t MailboxRing::max_payload(const MailboxGeometry& g) {
  return g.slot_bytes - kSlotHeader;
}

std::byte* MailboxRing::slot(uint64_t pos) const {
  return base_ + kSlotsOffset + (pos & (g_.slots - 1)) * g_.slot_bytes;
}

void MailboxRing::format(std::byte* base, const MailboxGeometry& g) {
  local::store_word(base + kHeadOffset, 0);
  local::store_word(base + kTailOffset, 0);
  for (uint64_t i = 0; i < g.slots; ++i)
    local::store_word(base + kSlotsOffset + i * g.slot_bytes, i);
}

bool MailboxRing::try_push(const MessageHeader& h, std::span<const std::byte> payload) {
  if (payload.size() > max_payload(g_))
    throw LimitError("message of " + std::to_string(payload.size()) +
                     " bytes exceeds the mailbox slot payload of " +
                     std::to_string(max_payload(g_)) + " bytes (raise mailbox.slot_bytes)");
  auto tail = local::word(base_ + kTailOffset);
  uint64_t pos = tail.load(std::memory_order_relaxed);
  std::byte* s;
  for (;;) {
    s = slot(pos);
    uint64_t seq = local::load_word(s);
    int64_t dif = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
    if (dif == 0) {
      if (tail.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
    } else if (dif < 0) {
      return false;  // full
    } else {
      pos = tail.load(std::memory_order_relaxed);
    }
  }
  uint64_t w1 = uint64_t{h.from_node} | (uint64_t{h.reply_mailbox} << 32);
  uint64_t w2 = uint64_t{h.tag} | (uint64_t{payload.size()} << 32);
  std::memcpy(s + 8, &w1, 8);
  std::memcpy(s + 16, &w2, 8);
  std::memcpy(s + 24, &h.request_id, 8);
  if (!payload.empty()) std::memcpy(s + kSlotHeader, payload.data(), payload.size());
  local::store_word(s, pos + 1);  // publish
  return true;
}

bool MailboxRing::try_pop(Message& out) {
  auto head = local::word(base_ + kHeadOffset);
  uint64_t pos = head.load(std::memory_order_relaxed);
  std::byte* s;
  for (;;) {
    s = slot(pos);
    uint64_t seq = local::load_word(s);
    int64_t dif = static_cast<int64_t>(seq) - static_cast<int64_t>(pos + 1);
    if (dif == 0) {
      if (head.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
    } else if (dif < 0) {
      return false;  // empty
    } else {
      pos = head.load(std::memory_order_relaxed);
    }
  }
  uint64_t w1, w2;
  std::memcpy(&w1, s + 8, 8);
  std::memcpy(&w2, s + 16, 8);
  std::memcpy(&out.request_id, s + 24, 8);
  out.from_node = static_cast<NodeId>(w1 & 0xffff);
  out.reply_mailbox = static_cast<uint32_t>(w1 >> 32);
  out.tag = static_cast<uint32_t>(w2 & 0xffffffff);
  size_t len = static_cast<size_t>(w2 >> 32);
  if (len > max_payload(g_)) {
    // The slot is consumed either way: handing it back keeps the ring usable after a bad message.
    local::store_word(s, pos + g_.slots);
    throw TransportError("malformed message in mailbox: length " + std::to_string(len));
  }
  out.payload.resize(len);
  if (len) std::memcpy(out.payload.data(), s + kSlotHeader, len);
  local::store_word(s, pos + g_.slots);  // hand the slot back to producers
  return true;
}

}  // namespace dmrt
