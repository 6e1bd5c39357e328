// HStore deployment: starts the HTS and SLS through any transport's ServiceHost, and plays the
// paper's centralized manager (§3.2): publishes failures, starts replacements that rebuild.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dmrt/indexes/hstore/detail/prebuilt.h"
#include "dmrt/indexes/hstore/detail/services.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/service.h"
#include "dmrt/runtime/service_hosting.h"
#include "dmrt/runtime/services_word.h"

namespace dmrt::hstore {

template <Transport T>
class Deployment {
 public:
  // Starts `fibers` fibers of `body` homed on `node`; returns what stops them (and re-throws what
  // a fiber threw): ServiceHosting::start (dmrt/runtime/service_hosting.h) on every transport.
  using Stop = std::function<void()>;
  using HostFactory = std::function<Stop(NodeId node, unsigned fibers, ServiceBody<T> body)>;

  // One host for both servers' fibers (each homed on its own node): what one OS thread running
  // both does on a machine with few cores (ServiceHosting::start_joint, shm).
  using HostPart = typename ServiceHosting<T>::Part;
  using JointHostFactory = std::function<Stop(std::vector<HostPart> parts)>;

  Deployment(std::shared_ptr<Index<T>> idx, HostFactory factory, ServerOptions so = {})
      : idx_(std::move(idx)), factory_(std::move(factory)), so_(so) {
    so_.root_slot = idx_->options().root_slot;
  }
  // Both servers on one joint host: the same protocol (ships and acks still go through the two
  // nodes' mailboxes), but a write's trip HTS -> SLS -> HTS is a fiber switch, not two handoffs
  // between OS threads. One server cannot fail alone then (fail_* refuse).
  Deployment(std::shared_ptr<Index<T>> idx, JointHostFactory joint, ServerOptions so = {})
      : idx_(std::move(idx)), joint_(std::move(joint)), so_(so) {
    so_.root_slot = idx_->options().root_slot;
    so_.shared_busy = &joint_busy_;
  }
  ~Deployment() {
    try {
      stop();
    } catch (...) {
      // A destructor cannot report; call stop() to see a server's failure.
    }
  }
  Deployment(const Deployment&) = delete;
  Deployment& operator=(const Deployment&) = delete;

  // Both servers: the HTS serves its (possibly bulk-loaded) table, the SLS builds from it.
  void start() {
    if (joint_) {
      std::vector<HostPart> parts;
      parts.push_back({idx_->meta().hts_node, idx_->hts_fibers(), hts_service<T>(so_)});
      parts.push_back({idx_->meta().sls_node, idx_->sls_fibers(), sls_service<T>(so_)});
      hts_ = joint_(std::move(parts));
      return;
    }
    start_hts(false);
    start_sls();
  }

  // The SLS dies and its skiplist and log are lost: writes stall at the HTS, SCAN waits, GET goes
  // on.
  void fail_sls(Client<T>& manager) {
    refuse_joint("fail_sls");
    stop_one(sls_);
    update_status(manager, idx_->meta(), [](uint64_t s) {
      return status::make(status::hts_up(s), false, status::hts_epoch(s), status::sls_epoch(s) + 1);
    });
  }
  // A new SLS (the next epoch) rebuilds the skiplist from the table and the pool, then serves.
  void rebuild_sls() { start_sls(); }

  // The HTS dies and its table is lost (zeroed here): point reads move to the SLS, writes wait.
  void fail_hts(Client<T>& manager) {
    refuse_joint("fail_hts");
    stop_one(hts_);
    const Meta& m = idx_->meta();
    uint64_t s = update_status(manager, m, [](uint64_t s) {
      return status::make(false, status::sls_up(s), status::hts_epoch(s) + 1, status::sls_epoch(s));
    });
    // Written back: on memory that is not coherent the zeros would otherwise wait in the
    // manager's cache and land later, over the table the new HTS rebuilds (a lost key, found by
    // HstoreCoherence.RebuildsAreLinearizableUnderNone).
    std::vector<uint64_t> zeros((1 << 20) / 8, 0);
    const uint64_t total = m.buckets() * kBucketBytes;
    for (uint64_t off = 0; off < total; off += zeros.size() * 8)
      manager.write(m.table + off, zeros.data(),
                    static_cast<uint32_t>(std::min<uint64_t>(zeros.size() * 8, total - off)),
                    FlushHint::kWriteBack);
    // Tell the SLS (and wait until it has heard): it stops taking the dead HTS's ships and
    // answers point reads from then on.
    uint64_t w[1] = {status::hts_epoch(s)};
    manager.call(m.sls_node, m.sls_inbox, kHtsDown, as_bytes(w));
  }
  // A new HTS (the next epoch) rebuilds the table from the SLS's skiplist, then serves.
  void rebuild_hts() { start_hts(true); }

  // Polls the status word until both servers serve; false after `timeout_ns` (transport clock).
  bool wait_serving(Client<T>& c, uint64_t timeout_ns) {
    uint64_t t0 = c.now_ns();
    for (;;) {
      // A client's status READ (FlushPoint::kBucketInvalidate): the servers CAS it at memory.
      uint64_t s = read_status(c, idx_->meta(),
                               flush_hint(idx_->options().faults.skip_flush,
                                          FlushPoint::kBucketInvalidate, FlushHint::kInvalidate));
      if (status::hts_up(s) && status::sls_up(s)) return true;
      if (c.now_ns() - t0 > timeout_ns) return false;
      c.pause();
    }
  }

  // Stops both servers; re-throws the first failure a server fiber had.
  void stop() {
    std::exception_ptr first;
    for (Stop* s : {&sls_, &hts_}) {
      try {
        stop_one(*s);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }

  Index<T>& index() { return *idx_; }

 private:
  void start_hts(bool recover) {
    hts_ =
        factory_(idx_->meta().hts_node, idx_->hts_fibers(), hts_service<T>(with_recover(recover)));
  }
  void start_sls() {
    sls_ = factory_(idx_->meta().sls_node, idx_->sls_fibers(), sls_service<T>(so_));
  }
  void refuse_joint(const char* what) const {
    if (joint_)
      throw ConfigError(std::string("hstore: ") + what +
                        ": both servers share one host, so one cannot fail alone");
  }
  ServerOptions with_recover(bool r) const {
    ServerOptions o = so_;
    o.recover = r;
    return o;
  }
  static void stop_one(Stop& s) {
    if (!s) return;
    Stop f = std::exchange(s, nullptr);
    f();
  }

  std::shared_ptr<Index<T>> idx_;
  HostFactory factory_;
  JointHostFactory joint_;
  std::atomic<uint64_t> joint_busy_{0};  // the joint host's "last busy" (ServerOptions)
  ServerOptions so_;
  Stop hts_, sls_;
};

// HStore cannot run without its servers: writes and scans are requests to them. The servers of
// an index whose memory nodes are other processes must be advertised there, each on the node the
// index places it on (dmrt-node --service hstore-hts / hstore-sls).
template <Transport T>
void require_remote_servers(Client<T>& setup, const Meta& m) {
  for (auto [node, info] :
       {std::pair{m.hts_node, HtsService::kInfo}, std::pair{m.sls_node, SlsService::kInfo}}) {
    if (!(await_services(setup, node) & service_bit(info)))
      throw ConfigError("hstore: memory node " + std::to_string(node) +
                        " does not run the service " + std::string(info.name) +
                        " (start its dmrt-node with --service " + std::string(info.name) +
                        "; with one memory node give both --service hstore-hts and "
                        "--service hstore-sls)");
  }
}

// The index and both servers, where `hosting` puts them: here (on one joint thread where the
// transport offers one: a write's HTS -> SLS -> HTS trip is then a fiber switch), or in the
// memory nodes' processes, which must run them. `so` tunes the servers started here.
template <Transport T>
Deployed<Index<T>> deploy(Client<T>& setup, Options o, const ServiceHosting<T>& hosting,
                          ServerOptions so = {}) {
  // A reader slower than grace/2 redoes its read, and the HTS redoes its key check without
  // bound: with the default 50 ms the HTS of a Soft-RoCE run under an emulated CPU never got past
  // its first key check. A longer grace only keeps replaced records allocated longer.
  o.grace_ns = std::max<uint64_t>(o.grace_ns, 10 * hosting.slow_round_trip_ns);
  Deployed<Index<T>> out;
  out.index = Index<T>::create(setup, o);
  if (!hosting.hosted_here()) {
    require_remote_servers(setup, out.index->meta());
    return out;
  }
  const Meta& m = out.index->meta();
  if (m.hts_node == m.sls_node)
    std::fprintf(stderr,
                 "hstore: one memory node: its hash-table and skiplist servers share node %u "
                 "(the paper places them on two: --memory-nodes 2)\n",
                 static_cast<unsigned>(m.hts_node));
  if (hosting.wakes_on_message || hosting.virtual_time) so.idle_sleep_us = 0;
  std::shared_ptr<Deployment<T>> servers;
  if (hosting.start_joint)  // the bench never fails one server alone
    servers = std::make_shared<Deployment<T>>(
        out.index, typename Deployment<T>::JointHostFactory(hosting.start_joint), so);
  else
    servers = std::make_shared<Deployment<T>>(
        out.index, typename Deployment<T>::HostFactory(hosting.start), so);
  servers->start();
  out.stop = [servers] { servers->stop(); };
  return out;
}

}  // namespace dmrt::hstore
