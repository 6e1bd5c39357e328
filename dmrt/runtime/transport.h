// The compile-time transport seam: what a policy (shm, sim, verbs) must provide to Client.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>

#include "dmrt/runtime/address.h"
#include "dmrt/runtime/messaging.h"
#include "dmrt/runtime/stats.h"
#include "dmrt/runtime/verbs.h"

namespace dmrt {

// An Endpoint is one client's handle on the cluster. `execute` is where the three completion
// styles differ, and the only place they differ:
//   shm   performs the verbs inline and returns;
//   verbs posts one chained work-request list per batch, then parks the fiber until the thread's
//         poller sees the completion;
//   sim   schedules each verb at its arrival time in virtual time and parks the fiber until the
//         simulated completion.
// In all three, the call returns once every verb of every batch has completed, so index code is
// written once against Client and never sees which style is underneath.
template <class E>
concept Endpoint = requires(E& e, const E& ce, std::span<Batch> batches, Counters& counters,
                            NodeId node, uint32_t mailbox, const MessageHeader& header,
                            std::span<const std::byte> payload, Message& msg) {
  // Performs the batches (several nodes at once = one round trip). Records transport-specific
  // figures (masked-CAS emulation) into `counters`; the Client records the rest.
  e.execute(batches, counters);
  // Lets other fibers run: the backoff inside spin loops and message waits.
  e.pause();
  // Nanoseconds on this transport's clock (virtual time on sim).
  { e.now_ns() } -> std::same_as<uint64_t>;
  // Two-sided messaging. send returns false when the destination mailbox is full.
  { e.try_send(node, mailbox, header, payload) } -> std::same_as<bool>;
  { e.try_receive(mailbox, msg) } -> std::same_as<bool>;
  // Identity and topology.
  { ce.home_node() } -> std::same_as<NodeId>;
  { ce.client_id() } -> std::same_as<uint32_t>;
  { ce.node_count() } -> std::convertible_to<size_t>;
  { ce.role(node) } -> std::same_as<NodeRole>;
  { ce.region_bytes(node) } -> std::same_as<uint64_t>;
  { ce.mailbox_geometry() } -> std::convertible_to<MailboxGeometry>;
  // Whether masked CAS is a single native verb here; otherwise it is a counted CAS loop.
  { ce.native_masked_cas() } -> std::same_as<bool>;
};

// A transport policy names itself and its Endpoint.
template <class T>
concept Transport = Endpoint<typename T::Endpoint> && requires {
  { T::kName } -> std::convertible_to<std::string_view>;
};

// Cache-line atomicity, the guarantee the papers' version schemes (CHIME's cache-line versions,
// Sherman's front/rear versions) rest on: a READ sees each aligned kCacheLine-byte line of its
// range whole, as of one instant (different lines may be of different instants, in any order),
// and each line of a WRITE lands whole. A policy that provides it says so with
// `static constexpr bool kLineAtomic = true;`; without it only 8-byte words are atomic and an
// index must not trust a version byte for the bytes next to it (dmrt/runtime/sealed_object.h).
// Where it depends on the hardware, the Endpoint also answers at run time (`bool line_atomic()
// const`: verbs on a software device, rxe or siw, copies with memcpy and is not);
// Client::line_atomic() combines both, and is what an index asks.
inline constexpr uint32_t kCacheLine = 64;
template <class T>
inline constexpr bool line_atomic = requires {
  requires T::kLineAtomic;
};

// Whether the process that creates an index on this transport usually hosts its memory-node
// services itself (shm's pool creator, sim's simulation): where not (verbs), the memory nodes'
// own processes (dmrt-node --service NAME) do, and an index whose service is optional falls back
// to doing the work on compute nodes. A policy says so with
// `static constexpr bool kHostsServices = true;`. Where services run for a given setup client is
// dmrt/runtime/service_hosting.h's answer.
template <class T>
inline constexpr bool hosts_services = requires {
  requires T::kHostsServices;
};

// Whether T advances a virtual clock (sim): a client that posts no verbs never moves it. A policy
// says so with `static constexpr bool kVirtualTime = true;`.
template <class T>
inline constexpr bool virtual_time = requires {
  requires T::kVirtualTime;
};

}  // namespace dmrt
