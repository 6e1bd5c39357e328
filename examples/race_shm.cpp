// Example: a RACE hash map on the shm transport (this process is the whole cluster), filled by
// 2 threads x 4 client fibers, then read back. Build: c++ race_shm.cpp $(pkg-config --cflags
// --libs dmrt).
#include <cstdio>
#include <string>

#include "dmrt/indexes/race/race.h"  // RACE, linked from libdmrt rather than compiled here
#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/scheduler.h"

int main() {
  using namespace dmrt;
  using Race = race::RaceIndex<ShmTransport>;
  // One memory node (node 0, 256 MiB, mapped lazily) and one compute node (node 1).
  auto pool = shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{256} << 20));
  const NodeId compute = 1;

  // A client is one fiber's connection to the cluster; client ids are unique per node.
  Client<ShmTransport> setup(shm::Endpoint(pool, compute, 1000));
  std::shared_ptr<Race> map = Race::create(setup, Race::Options{});

  // 8 clients insert 1000 keys each, every client from its own fiber with its own handle.
  Scheduler sched({/*threads=*/2, /*fibers per thread=*/4});
  sched.run([&](const WorkerId& w) {
    Client<ShmTransport> c(shm::Endpoint(pool, compute, w.index));
    auto h = map->handle(c);
    for (Key k = w.index * 1000; k < (w.index + 1) * 1000; ++k)
      h.insert(k, "v" + std::to_string(k));
  });

  auto h = map->handle(setup);
  std::string value;
  unsigned found = 0;
  for (Key k = 0; k < 8000; ++k) found += h.search(k, value) && value == "v" + std::to_string(k);
  h.update(7, "seven");
  h.remove(8);
  std::printf("race_shm: %u of 8000 keys found; key 7 -> %s; key 8 %s; %lu round trips by setup\n",
              found, h.search(7, value) ? value.c_str() : "(absent)",
              h.search(8, value) ? "present" : "removed",
              static_cast<unsigned long>(setup.counters().total.round_trips));
  return found == 8000 ? 0 : 1;
}
