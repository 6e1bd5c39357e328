// HStore two-sided protocol: message tags, word-array payloads, and a send that can be abandoned.
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include <string>

#include "dmrt/runtime/client.h"
#include "dmrt/runtime/key_bytes.h"
#include "dmrt/runtime/messaging.h"

namespace dmrt::hstore {

// Every payload is an array of 64-bit words (layouts in the comments: one [..] per word). The
// layouts are those of integer keys (key_size 8), where [key] is the key itself. With byte keys
// (key_size != 8) every [key] word holds the key's length instead, and the key's bytes follow the
// fixed words of that request / entry / row, zero-padded to whole words (key_words(length)).
enum Tag : uint32_t {
  // client -> HTS: [op | units<<8 | hts_epoch<<32] [key] [record address] [request tag]
  kReq = 0x48530001,
  // HTS -> client: [code] [old slot word (0: none)]
  kReply,
  // HTS -> SLS: [hts_epoch | sls_epoch<<32] [worker | count<<32] [batch seq] then per entry
  //             [op | client node<<8 | client id<<32] [key] [new slot] [old slot] [request tag]
  kShip,
  // SLS -> HTS worker ack box: [sls_epoch] [batch seq]
  kAck,
  // SLS -> HTS inbox: [sls_epoch] (a new SLS asks the HTS to hold its table still)
  kHello,
  // HTS -> SLS control box: [sls_epoch] (every worker parked: the table can be read)
  kReady,
  // SLS -> HTS inbox: [sls_epoch] (skiplist rebuilt; ship again)
  kRebuilt,
  // client -> SLS: [from] [count]
  kScan,
  // SLS -> client: [rows total | part<<32] then per row [key] [slot]
  kScanPart,
  // client -> SLS (HTS down): [key]
  kDget,
  // SLS -> client: [code] [slot]
  kDgetReply,
  // manager -> SLS: [new hts_epoch] (the HTS is gone: stop taking its ships, serve GETs);
  // echoed back to the sender's reply box once done
  kHtsDown,
  // new HTS -> SLS: [hts_epoch] (stream me the skiplist)
  kDump,
  // SLS -> HTS control box: [count] then per key [key] [slot]
  kDumpKeys,
  // SLS -> HTS control box: [count] then per client [client] [request tag] [old slot]
  kDumpDedup,
  // SLS -> HTS control box: [sls_epoch] [keys] [dedup entries]
  kDumpEnd,
};

enum class Op : uint8_t { kInsert = 1, kUpdate = 2, kRemove = 3 };
// Shipped entry kinds: a key now maps to a record, or is gone.
enum class EntryOp : uint8_t { kSet = 1, kDel = 2 };

// Reply codes to the client.
enum Code : uint64_t {
  kOk = 1,      // the write took effect (old slot word follows)
  kNo = 2,      // it did not (insert of a present key, update/remove of an absent one)
  kFull = 3,    // the hash table's overflow area is exhausted
  kStale = 4,   // sent to a replaced HTS epoch: re-read the status and resend
  kAbsent = 5,  // degraded GET: no such key
  kFound = 6,   // degraded GET: slot follows
  kRetry = 7,   // degraded GET: the SLS is not serving point reads now (HTS is up)
};

inline constexpr size_t kShipHeaderWords = 3;
inline constexpr size_t kShipEntryWords = 5;

// Words a key takes after its entry's fixed words: none for an integer key (the [key] word is it).
inline size_t key_words(size_t len, bool wide) {
  return wide ? (len + 7) / 8 : 0;
}
// The [key] word of `k`, and its trailing bytes (appended to `w`, byte keys only).
inline uint64_t key_word(KeyView k, bool wide) {
  return wide ? k.size() : key_of_bytes(k);
}
inline void append_key(std::vector<uint64_t>& w, KeyView k, bool wide) {
  if (!wide) return;
  size_t at = w.size();
  w.resize(at + key_words(k.size(), true), 0);
  std::memcpy(w.data() + at, k.data(), k.size());
}
// Reads a key whose [key] word is `kw` and whose bytes (byte keys) start at w[pos]; advances pos
// past them. False when the length is 0, above the index's key_size (a server sizes its skiplist
// nodes by it), or runs past the payload.
inline bool take_key(const std::vector<uint64_t>& w, size_t& pos, uint64_t kw, uint32_t key_size,
                     std::string& out) {
  if (key_size == kIntegerKeyBytes) {
    out.resize(8);
    put_key_bytes(kw, out.data());
    return true;
  }
  if (kw == 0 || kw > key_size || pos + key_words(kw, true) > w.size()) return false;
  out.assign(reinterpret_cast<const char*>(w.data() + pos), kw);
  pos += key_words(kw, true);
  return true;
}

inline size_t max_words(const MailboxGeometry& g) {
  return MailboxRing::max_payload(g) / 8;
}

inline std::span<const std::byte> as_bytes(std::span<const uint64_t> w) {
  return {reinterpret_cast<const std::byte*>(w.data()), w.size() * 8};
}
// Payload words; false when the payload is not whole words or shorter than `min_words`.
inline bool words_of(const Message& m, std::vector<uint64_t>& out, size_t min_words) {
  if (m.payload.size() % 8 || m.payload.size() / 8 < min_words) return false;
  out.resize(m.payload.size() / 8);
  if (!out.empty()) std::memcpy(out.data(), m.payload.data(), m.payload.size());
  return true;
}

// Sends one message, pausing while the mailbox is full, like Client::send, but gives up (false)
// as soon as `abandon()` says so: a server must not hang on a peer that died with a full inbox,
// and a client must not hang on a server that was replaced. Counted like Client::send.
template <Transport T, class Abandon>
bool post(Client<T>& c, NodeId node, uint32_t box, uint32_t tag, std::span<const uint64_t> words,
          uint64_t request_id, uint32_t reply_box, Abandon&& abandon) {
  MessageHeader h{c.home_node(), reply_box, tag, request_id};
  auto payload = as_bytes(words);
  while (!c.endpoint().try_send(node, box, h, payload)) {
    if (abandon()) return false;
    c.pause();
  }
  Counters& k = c.counters();
  for (VerbCounters* v : {&k.total, &k.by_node[node], &k.role(c.role(node))}) {
    ++v->messages;
    v->message_bytes += payload.size();
  }
  return true;
}

// Charges server CPU time where the transport models it (sim), nothing elsewhere (shm and verbs
// spend the real time).
template <Transport T>
void charge_cpu(Client<T>& c, uint64_t ns) {
  if constexpr (requires { c.endpoint().charge_cpu(ns); })
    if (ns) c.endpoint().charge_cpu(ns);
}

// A server's receive from one of its own mailboxes. Any writer of the region can leave a malformed
// slot there (docs/security.md); the ring drops it and throws. A server counts it (`on_malformed`)
// and goes on serving, as the echo service does, instead of stopping. Told apart from a failing
// transport by the ring's count of dropped slots, which only a malformed slot raises.
template <Transport T, class OnMalformed>
bool receive_or_skip(Client<T>& c, uint32_t mailbox, Message& out, OnMalformed&& on_malformed) {
  const uint64_t dropped = MailboxRing::malformed();
  try {
    return c.try_receive(mailbox, out);
  } catch (const TransportError&) {
    if (MailboxRing::malformed() == dropped) throw;
    on_malformed();
    return false;
  }
}

}  // namespace dmrt::hstore
