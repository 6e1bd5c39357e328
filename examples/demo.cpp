// demo: a tour of the runtime on shm: fibers on threads doing verbs, with their counters.
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/scheduler.h"

int main(int argc, char** argv) {
  using namespace dmrt;
  unsigned threads = argc > 1 ? std::atoi(argv[1]) : 2;
  unsigned fibers = argc > 2 ? std::atoi(argv[2]) : 8;
  auto pool = shm::Pool::create(ClusterConfig::embedded());
  GlobalAddress counter;
  {
    Client<ShmTransport> setup(shm::Endpoint(pool, 1, 0));
    counter = setup.alloc(8);
  }
  std::mutex mu;
  Counters all;
  Histogram latency;
  Scheduler sched({threads, fibers});
  sched.run([&](const WorkerId& w) {
    Client<ShmTransport> c(shm::Endpoint(pool, 1, w.index));
    Histogram h;
    for (int i = 0; i < 10000; ++i) {
      uint64_t t0 = c.now_ns();
      c.faa(counter, 1);
      h.record(c.now_ns() - t0);
    }
    std::lock_guard g(mu);
    all += c.counters();
    latency.merge(h);
  });
  Client<ShmTransport> check(shm::Endpoint(pool, 1, 0));
  std::printf("counter=%lu expected=%u faa=%lu round_trips=%lu p50=%luns p99=%luns\n",
              check.read_value<uint64_t>(counter), threads * fibers * 10000,
              all.total.count(VerbKind::kFaa), all.total.round_trips, latency.percentile(0.5),
              latency.percentile(0.99));
}
