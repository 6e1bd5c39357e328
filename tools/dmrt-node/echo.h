// dmrt-node's echo service on mailbox 0 (how peers and tests check a node's messaging): answers
// tag 1 with tag 2 and the same payload, a clock request (tag 3) with this node's steady clock
// (dmrt/runtime/clock_messages.h), anything else with an empty tag 0. A bad message is counted and
// skipped; it never stops the node.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <thread>

#include "dmrt/runtime/client.h"
#include "dmrt/runtime/clock_messages.h"
#include "dmrt/runtime/service.h"

namespace dmrt::node {

inline constexpr uint32_t kEchoTag = 1;  // request: payload; reply tag 2: the same payload

// What the echo service saw; shared with whoever hosts it, read at exit.
struct EchoCounters {
  std::atomic<uint64_t> answered{0};
  std::atomic<uint64_t> bad{0};  // messages that threw (malformed, or a reply that failed)
};

// The echo service body; `idle_sleep_us` (real-time hosts) is slept when the inbox is empty.
// Prints the first few bad messages' reasons to stderr, counts all of them.
template <Transport T>
ServiceBody<T> echo_service(EchoCounters& counters, uint32_t idle_sleep_us = 200) {
  return [&counters, idle_sleep_us](ServiceContext<T>& ctx) {
    if (ctx.fiber() != 0) return;
    Client<T>& c = ctx.client();
    Message m;
    // Within 2 ms of an answer the next request is likely close (a clock measurement sends 16 in
    // a row, and its bound is half the round trip): poll without sleeping until then.
    constexpr uint64_t kBusyNs = 2'000'000;
    uint64_t last_ns = 0;
    while (!ctx.stop_requested()) {
      try {
        if (!c.try_receive(0, m)) {
          c.pause();
          if (idle_sleep_us && c.now_ns() - last_ns > kBusyNs)
            std::this_thread::sleep_for(std::chrono::microseconds(idle_sleep_us));
          continue;
        }
        last_ns = c.now_ns();
        if (m.tag == kEchoTag)
          c.reply(m, kEchoTag + 1, m.payload);
        else if (m.tag == kClockRequestTag)
          c.reply(m, kClockAnswerTag, clock_answer_payload(c.now_ns()));
        else
          c.reply(m, 0, {});
        counters.answered.fetch_add(1, std::memory_order_relaxed);
      } catch (const std::exception& e) {
        if (counters.bad.fetch_add(1, std::memory_order_relaxed) < 10)
          std::cerr << "dmrt-node: echo: bad message skipped: " << e.what() << std::endl;
      }
    }
  };
}

}  // namespace dmrt::node
