// Example: two processes share one cluster. This process creates a named shm pool (the memory
// nodes' memory, which lives as long as its creator) and a RACE map in it, then starts a compute
// process (itself again, with the pool's name) that attaches to the pool and the map, reads what
// the first wrote and adds its own keys. Build: c++ shm_attach.cpp $(pkg-config --cflags --libs
// dmrt). Run: ./shm_attach
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "dmrt/indexes/race/race.h"
#include "dmrt/policies/shm/transport.h"

using namespace dmrt;
using Race = race::RaceIndex<ShmTransport>;

// Both processes use the same options: attach() finds the index from them (its root slot).
Race::Options options() {
  Race::Options o;
  o.value_size = 32;  // longest value stored (RACE refuses longer ones with LimitError)
  return o;
}

int compute_process(const std::string& pool_name) {
  auto pool = shm::Pool::attach(pool_name);  // maps /dev/shm/dmrt.<name>.<node>
  const NodeId compute = pool->config().compute_nodes().front();
  Client<ShmTransport> c(shm::Endpoint(pool, compute, 2));  // ids differ from the creator's
  auto map = Race::attach(c, options());
  auto h = map->handle(c);
  std::string v;
  unsigned seen = 0;
  for (Key k = 1; k <= 100; ++k) seen += h.search(k, v) && v == "from the creator";
  for (Key k = 101; k <= 200; ++k) h.insert(k, "from the compute process");
  std::printf("shm_attach: compute process %d saw %u of 100 keys, added 100\n", getpid(), seen);
  return seen == 100 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "compute") == 0) return compute_process(argv[2]);

  const std::string name = "example-" + std::to_string(getpid());
  auto pool = shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{64} << 20), name);
  const NodeId compute = pool->config().compute_nodes().front();
  Client<ShmTransport> c(shm::Endpoint(pool, compute, 1));
  auto map = Race::create(c, options());
  auto h = map->handle(c);
  for (Key k = 1; k <= 100; ++k) h.insert(k, "from the creator");

  const pid_t child = fork();
  if (child == 0) {
    execl("/proc/self/exe", argv[0], "compute", name.c_str(), static_cast<char*>(nullptr));
    std::perror("exec");
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::string v;
  unsigned added = 0;
  for (Key k = 101; k <= 200; ++k) added += h.search(k, v) && v == "from the compute process";
  std::printf("shm_attach: creator %d sees the compute process's %u keys\n", getpid(), added);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 && added == 100 ? 0 : 1;
}
