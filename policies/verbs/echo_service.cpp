#include "policies/verbs/echo_service.h"

#include <chrono>
#include <thread>

#include "policies/verbs/transport.h"
#include "runtime/client.h"

namespace dmrt::verbs {

void run_echo_service(Cluster& cluster, unsigned slot, const std::function<bool()>& stop,
                      EchoStats& stats) {
  Cluster::ThreadBinding bind(cluster, slot);
  Client<VerbsTransport> c(cluster.endpoint(cluster.self(), 0));
  Message m;
  while (!stop()) {
    try {
      if (!c.try_receive(0, m)) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        continue;
      }
      if (m.tag == kEchoTag)
        c.reply(m, kEchoTag + 1, m.payload);
      else
        c.reply(m, 0, {});
      ++stats.answered;
    } catch (const std::exception& e) {
      // A bad message (its slot is already back in the ring) or a reply to a node or mailbox
      // that does not exist: one sender's problem, not the node's.
      ++stats.bad_messages;
      std::lock_guard<std::mutex> g(stats.mu);
      stats.last_error = e.what();
    }
  }
}

}  // namespace dmrt::verbs
