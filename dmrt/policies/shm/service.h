// ServiceHost for shm: a memory-node service as an OS thread of this process running fibers
// (and JointServiceHost: several services on one thread).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/scheduler.h"
#include "dmrt/runtime/service.h"

namespace dmrt::shm {

// Runs `fibers` fibers of `body` on a thread of its own, homed on `node`. stop() (or the
// destructor) raises the stop flag, joins, and re-throws what a fiber threw.
class ServiceHost : public ServiceThread {
 public:
  ServiceHost(std::shared_ptr<Pool> pool, NodeId node, unsigned fibers,
              ServiceBody<ShmTransport> body, ClientOptions opts = {})
      : pool_(std::move(pool)) {
    start([this, node, fibers, body = std::move(body), opts](const std::atomic<bool>& stop) {
      Scheduler sched({1, fibers});
      sched.run([&](const WorkerId& w) {
        Client<ShmTransport> c(Endpoint(pool_, node, kServiceClientIdBase + w.fiber), opts);
        const Region& r = pool_->region(node);
        ServiceContext<ShmTransport> ctx(c, r.base, r.bytes, w.fiber, stop);
        run_fiber([&] { body(ctx); });  // a failure stops the other fibers too
      });
    });
  }
  ~ServiceHost() {
    try {
      stop();  // before pool_ goes: the fibers use it
    } catch (...) {
      // A destructor cannot report; call stop() to see the failure.
    }
  }

 private:
  std::shared_ptr<Pool> pool_;
};

// Several services' fibers on one OS thread, each homed on its own node: on a machine with few
// cores a request that crosses services (HStore's HTS -> SLS -> HTS) is then a fiber switch,
// where with a thread per service it waits for each thread to be scheduled, and each idle service
// thread takes a core's share. Fibers [0, parts[0].fibers) run the first part, the next ones the
// second, ...; each part sees its own fiber numbers from 0. Client ids stay distinct per node.
class JointServiceHost : public ServiceThread {
 public:
  struct Part {
    NodeId node;
    unsigned fibers;
    ServiceBody<ShmTransport> body;
  };
  JointServiceHost(std::shared_ptr<Pool> pool, std::vector<Part> parts) : pool_(std::move(pool)) {
    unsigned total = 0;
    for (const Part& p : parts) total += p.fibers;
    start([this, total, parts = std::move(parts)](const std::atomic<bool>& stop) {
      Scheduler sched({1, total});
      sched.run([&](const WorkerId& w) {
        size_t i = 0;
        unsigned f = w.fiber;
        while (f >= parts[i].fibers) f -= parts[i++].fibers;
        Client<ShmTransport> c(Endpoint(pool_, parts[i].node, kServiceClientIdBase + w.fiber));
        const Region& r = pool_->region(parts[i].node);
        ServiceContext<ShmTransport> ctx(c, r.base, r.bytes, f, stop);
        run_fiber([&] { parts[i].body(ctx); });
      });
    });
  }
  ~JointServiceHost() {
    try {
      stop();  // before pool_ goes: the fibers use it
    } catch (...) {
      // A destructor cannot report; call stop() to see the failure.
    }
  }

 private:
  std::shared_ptr<Pool> pool_;
};

}  // namespace dmrt::shm
