#include "dmrt/runtime/messaging.h"

#include <array>
#include <chrono>
#include <cstring>

#include "dmrt/runtime/error.h"
#include "dmrt/runtime/local_memory.h"

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

namespace {
// How many times one call re-reads a ring's words before it gives up for now (reports full or
// empty). Another party that moves the ring on makes a call retry; past this many retries the
// ring is being rewritten faster than one push or pop can keep up, which only a hostile writer
// does. The caller polls again later, and checks its stop flag in between.
constexpr int kMaxRetries = 1 << 12;

// How long a sequence word no party writes must stay in a slot at the head before the consumer
// repairs it: far past any write in flight, short enough that a hostile word costs little.
constexpr auto kBogusAfter = std::chrono::milliseconds(200);

// The last few suspicious (slot, position, word) this thread saw, with when it first saw each.
struct Suspect {
  const std::byte* slot = nullptr;
  uint64_t pos = 0, seq = 0;
  std::chrono::steady_clock::time_point since{};
};
thread_local std::array<Suspect, 4> suspects{};
thread_local unsigned next_suspect = 0;

// True once this thread has seen `seq` at `pos` in `slot` for kBogusAfter.
bool stayed_bogus(const std::byte* slot, uint64_t pos, uint64_t seq) {
  const auto now = std::chrono::steady_clock::now();
  for (Suspect& x : suspects)
    if (x.slot == slot && x.pos == pos && x.seq == seq) {
      if (now - x.since < kBogusAfter) return false;
      x = Suspect{};  // judged: the next bogus word here starts its own wait
      return true;
    }
  suspects[next_suspect++ % suspects.size()] = {slot, pos, seq, now};
  return false;
}
}  // namespace

// The ring's words are pool bytes: anyone who can write the region (on verbs, any holder of its
// rkey) can write any value into them. Neither call trusts them to end a loop: a sequence word
// that no party of the protocol can have written is recognised (the position word has not moved
// since it was read), and every loop has a bound.
bool MailboxRing::try_push(const MessageHeader& h, std::span<const std::byte> payload) {
  if (payload.size() > max_payload(g_))
    throw LimitError("message of " + std::to_string(payload.size()) +
                     " bytes exceeds the mailbox slot payload of " +
                     std::to_string(max_payload(g_)) + " bytes (raise mailbox.slot_bytes)");
  auto tail = local::word(base_ + kTailOffset);
  uint64_t pos = tail.load(std::memory_order_acquire);
  std::byte* s = nullptr;
  for (int tries = 0;; ++tries) {
    if (tries == kMaxRetries) return false;
    s = slot(pos);
    uint64_t seq = local::load_word(s);
    int64_t dif = static_cast<int64_t>(seq - pos);
    if (dif == 0) {
      if (tail.compare_exchange_weak(pos, pos + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire))
        break;
    } else if (dif < 0) {
      return false;  // full (or a bogus word the consumer will repair when it gets there)
    } else {
      // Another producer took the slot: the tail has moved on. A tail that has not moved means
      // the sequence word is bogus; the consumer repairs it when it reaches this slot.
      uint64_t again = tail.load(std::memory_order_acquire);
      if (again == pos) return false;
      pos = again;
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
  uint64_t pos = head.load(std::memory_order_acquire);
  std::byte* s = nullptr;
  for (int tries = 0;; ++tries) {
    if (tries == kMaxRetries) return false;
    s = slot(pos);
    uint64_t seq = local::load_word(s);
    int64_t dif = static_cast<int64_t>(seq - (pos + 1));
    if (dif == 0) {
      if (head.compare_exchange_weak(pos, pos + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire))
        break;
      continue;
    }
    // Empty (seq == pos), or the consumer of the previous lap has not handed the slot back yet
    // (seq == pos + 1 - slots): nothing to take.
    if (seq == pos || seq == pos + 1 - g_.slots) return false;
    // Any other value is legitimate only while the head moves on under us (another consumer
    // took this slot). A head that has not moved means the word is bogus.
    uint64_t again = head.load(std::memory_order_acquire);
    if (again != pos) {
      pos = again;
      continue;
    }
    // A remote producer's WRITE of the word may be seen half done (a software RDMA device copies
    // it with memcpy, and an emulated CPU can stall inside that copy): a value is bogus only once
    // this thread has seen it stay, with the head unmoved, for kBogusAfter. Until then the slot
    // is not ready.
    if (!stayed_bogus(s, pos, seq)) return false;
    if (repair(pos, seq)) {
      malformed_.fetch_add(1, std::memory_order_relaxed);
      throw TransportError("malformed message in mailbox: slot sequence word " +
                           std::to_string(seq) + " at ring position " + std::to_string(pos) +
                           " (the slot is dropped)");
    }
    // The word changed while we looked (a producer or consumer moved it): read it again.
  }
  // The slot goes back to producers on every exit, a malformed message's included: a throw
  // here must not shrink the ring for good.
  struct Release {
    std::byte* slot;
    uint64_t next;
    ~Release() { local::store_word(slot, next); }
  } release{s, pos + g_.slots};
  uint64_t w1, w2;
  std::memcpy(&w1, s + 8, 8);
  std::memcpy(&w2, s + 16, 8);
  std::memcpy(&out.request_id, s + 24, 8);
  out.from_node = static_cast<NodeId>(w1 & 0xffff);
  out.reply_mailbox = static_cast<uint32_t>(w1 >> 32);
  out.tag = static_cast<uint32_t>(w2 & 0xffffffff);
  size_t len = static_cast<size_t>(w2 >> 32);
  if (len > max_payload(g_)) {
    malformed_.fetch_add(1, std::memory_order_relaxed);
    throw TransportError("malformed message in mailbox: length " + std::to_string(len) +
                         " exceeds the slot payload of " + std::to_string(max_payload(g_)) +
                         " bytes (the message is dropped)");
  }
  out.payload.resize(len);
  if (len) std::memcpy(out.payload.data(), s + kSlotHeader, len);
  return true;
}

// The slot at head position `pos` holds `seq`, a value no producer or consumer writes there.
// Puts the slot back into a state the protocol knows, with a CAS so that a party that moves the
// word meanwhile wins (then false: nothing was repaired):
// - a producer already claimed position `pos` (the tail is past it) and its sequence word was
//   overwritten: the consumer takes the slot, drops its message and hands the slot back;
// - no producer has claimed it: the slot becomes free for the producer of position `pos`.
bool MailboxRing::repair(uint64_t pos, uint64_t seq) {
  std::byte* s = slot(pos);
  auto word = local::word(s);
  const uint64_t tail = local::load_word(base_ + kTailOffset);
  if (static_cast<int64_t>(tail - pos) > 0) {
    auto head = local::word(base_ + kHeadOffset);
    uint64_t expect = pos;
    if (!head.compare_exchange_strong(expect, pos + 1, std::memory_order_acq_rel)) return false;
    word.store(pos + g_.slots, std::memory_order_release);
    return true;
  }
  return word.compare_exchange_strong(seq, pos, std::memory_order_acq_rel);
}

}  // namespace dmrt
