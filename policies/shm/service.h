// ServiceHost for shm: a memory-node service as an OS thread of this process running fibers.
#pragma once

#include <memory>
#include <utility>

#include "policies/shm/transport.h"
#include "runtime/scheduler.h"
#include "runtime/service.h"

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

}  // namespace dmrt::shm
