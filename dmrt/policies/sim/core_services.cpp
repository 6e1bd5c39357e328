// The simulator core's side of memory-node services: fibers that watch their node's memory,
// sleep while it is quiet, and are charged their CPU in virtual time (see core.cpp for verbs).
#include <algorithm>
#include <boost/fiber/operations.hpp>
#include <functional>
#include <thread>

#include "dmrt/policies/sim/core.h"

namespace dmrt::sim {

using boost::fibers::context;

void Core::wake(uint32_t slot, uint64_t t) {
  Watcher& w = watchers_[slot];
  w.active = false;
  --watching_[w.node];
  push_ready(t, w.fid, w.ctx);
}

void Core::wake_watchers(NodeId node, uint64_t t) {
  // Slot order: deterministic; the ready heap then orders by (time, fiber id) anyway.
  for (uint32_t i = 0; i < watchers_.size(); ++i)
    if (watchers_[i].active && watchers_[i].node == node) {
      ++svc_[node].wakeups;
      wake(i, t);
    }
}

void Core::wake_services() {
  ++wake_epoch_;
  for (uint32_t i = 0; i < watchers_.size(); ++i)
    if (watchers_[i].active) wake(i, now_ps_);
}

void Core::service_pause(NodeId node) {
  if (!active_here()) {
    boost::this_fiber::yield();
    return;
  }
  const uint64_t start = now_ps_, seen = changes_[node], epoch = wake_epoch_;
  sleep_until_ps(start + poll_ps_);
  // A poll after poll_ns would see a change made meanwhile: return as a spinning core would.
  if (changes_[node] != seen || wake_epoch_ != epoch || start + idle_ps_ <= now_ps_) return;
  // Otherwise every further poll would see the same memory until something reaches the node:
  // block until then (or the idle cap), instead of simulating each empty poll.
  context* self = context::active();
  uint32_t slot = 0;
  while (slot < watchers_.size() && watchers_[slot].active) ++slot;
  if (slot == watchers_.size()) watchers_.emplace_back();
  Watcher& w = watchers_[slot];
  w.ctx = self;
  w.fid = props(self).id;
  w.gen = ++watch_gen_;
  w.node = node;
  w.active = true;
  ++watching_[node];
  push_watch_timeout(start + idle_ps_, slot, w.gen);
  reschedule(self);
}

void Core::charge_service_cpu(NodeId node, uint64_t ns) {
  if (!active_here()) return;
  svc_[node].cpu_ps += ns * 1000;
  sleep_until_ps(now_ps_ + ns * 1000);
}

void Core::service_received(NodeId node) {
  if (!active_here()) return;
  ++svc_[node].messages;
  svc_[node].cpu_ps += msg_ps_;
  sleep_until_ps(now_ps_ + msg_ps_);
}

uint64_t Core::add_service_starter(std::function<void()> start) {
  starters_.emplace_back(next_starter_, std::move(start));
  return next_starter_++;
}

void Core::remove_service_starter(uint64_t token) {
  std::erase_if(starters_, [token](const auto& s) { return s.first == token; });
}

void Core::service_launched() {
  if (live_services_ == 0) service_thread_ = std::this_thread::get_id();
  ++live_services_;
}

void Core::service_stopped() {
  if (live_services_ > 0) --live_services_;
}

}  // namespace dmrt::sim
