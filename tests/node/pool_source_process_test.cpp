// A pool that is only memory, across processes: dmrt-node creates it on a file (its waits poll,
// as across hosts) and hosts HStore's servers; two compute processes attach by path, claim their
// nodes, share one HStore index (each writes its keys through the servers, reads the other's),
// and time messages between them while the receiver is backed off (the polling bound).
// The node then closes the pool and the file stays. DMRT_NODE names the binary.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dmrt/indexes/hstore/detail/services.h"
#include "dmrt/indexes/hstore/hstore.h"
#include "dmrt/policies/shm/pool.h"
#include "dmrt/policies/shm/processes.h"
#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/clock_messages.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/services_word.h"

namespace dmrt {
namespace {

using Clock = std::chrono::steady_clock;
using ShmClient = Client<ShmTransport>;

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (!f || dup2(fileno(stdout), 2) < 0) _exit(120);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(121);
  }
  return pid;
}

// Exit status of `pid`, or -1 after `seconds` (then it is killed).
int wait_exit(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

constexpr unsigned kRootSlotBarrier = 60;  // a root slot of node 0 the two processes count in
constexpr uint32_t kPingMailbox = 20;      // on the second compute node; no client replies there
constexpr int kPings = 60;
constexpr Key kKeysEach = 200;

// Polls `word` on node 0 until it reaches `n` (10 s), pausing as any waiting fiber does.
void await_count(ShmClient& c, GlobalAddress word, uint64_t n) {
  const auto end = Clock::now() + std::chrono::seconds(10);
  while (c.read_value<uint64_t>(word) < n) {
    if (Clock::now() > end) throw Error("the other compute process did not arrive");
    c.pause();
  }
}

// One compute process: rank 0 or 1 of the pool's two compute nodes. Returns its exit status.
int compute_process(const std::string& path, unsigned rank) {
  std::shared_ptr<shm::Pool> pool;
  const auto end = Clock::now() + std::chrono::seconds(10);
  while (!pool) {
    try {
      pool = shm::Pool::attach(shm::PoolSource{path, -1});
    } catch (const ConfigError&) {
      if (Clock::now() > end) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (!pool->polling_waits()) return 3;
  const std::vector<NodeId> compute = pool->config().compute_nodes();
  if (compute.size() != 2) return 4;
  const NodeId home = compute[rank];
  shm::NodeClaim claim(*pool, home);
  ShmClient c(shm::Endpoint(pool, home, 1));
  hstore::Options o;
  o.expected_keys = 4096;
  std::shared_ptr<hstore::Index<ShmTransport>> index;
  if (rank == 0) {
    const uint64_t want =
        service_bit(hstore::HtsService::kInfo) | service_bit(hstore::SlsService::kInfo);
    // The node program also answers clock requests (layout::kServicesClock).
    if (await_services(c, 0) != (want | layout::kServicesClock)) return 5;
    index = hstore::Index<ShmTransport>::create(c, o);
  } else {
    while (c.read_value<uint64_t>(layout::root_slot(0, o.root_slot)) == 0) {
      if (Clock::now() > end + std::chrono::seconds(20)) return 6;
      c.pause();
    }
    index = hstore::Index<ShmTransport>::attach(c, o);
  }
  // The node program's clock, through the pool's mailboxes alone (as a guest on another host
  // measures it): one host here, so the true offset is 0 and must lie within the bound.
  const ClockOffset clock = measure_clock_offset(c, 0);
  std::fprintf(stderr, "compute process %u: clock offset %lld ns, bound %llu ns\n", rank,
               static_cast<long long>(clock.offset_ns),
               static_cast<unsigned long long>(clock.bound_ns));
  if (clock.bound_ns > 1'000'000'000 ||
      static_cast<uint64_t>(std::abs(clock.offset_ns)) > clock.bound_ns)
    return 10;
  auto h = index->handle(c);
  const Key first = 1 + rank * 1000, other = 1 + (1 - rank) * 1000;
  for (Key k = first; k < first + kKeysEach; ++k)
    if (!h.insert(k, "p" + std::to_string(rank) + "k" + std::to_string(k))) return 7;
  const GlobalAddress barrier = layout::root_slot(0, kRootSlotBarrier);
  c.faa(barrier, 1);
  await_count(c, barrier, 2);
  std::string v;
  for (Key k = other; k < other + kKeysEach; ++k)
    if (!h.search(k, v) || v != "p" + std::to_string(1 - rank) + "k" + std::to_string(k)) return 8;
  // Pings, 2 ms apart, each stamped with the sender's clock (one host here): the receiver has
  // backed off to its longest polling sleep before each arrives.
  if (rank == 0) {
    for (int i = 0; i < kPings; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const int64_t now = Clock::now().time_since_epoch().count();
      c.send(compute[1], kPingMailbox, 9, {reinterpret_cast<const std::byte*>(&now), 8});
    }
  } else {
    std::vector<double> us;
    for (int i = 0; i < kPings; ++i) {
      Message m = c.receive(kPingMailbox);
      int64_t sent = 0;
      std::memcpy(&sent, m.payload.data(), 8);
      us.push_back(static_cast<double>(Clock::now().time_since_epoch().count() - sent) / 1e3);
    }
    std::sort(us.begin(), us.end());
    std::fprintf(
        stderr, "polling wake-up after a 2 ms idle gap: median %.0f us, p90 %.0f us, max %.0f us\n",
        us[us.size() / 2], us[us.size() * 9 / 10], us.back());
  }
  c.faa(barrier, 1);
  await_count(c, barrier, 4);
  return 0;
}

TEST(NodeProcess, AFilePoolServesTwoComputeProcessesByPolling) {
  const char* node_bin = std::getenv("DMRT_NODE");
  ASSERT_TRUE(node_bin && *node_bin) << "set DMRT_NODE to the dmrt-node binary";
  const char* dir = std::getenv("TMPDIR");
  const std::string base =
      std::string(dir && *dir ? dir : "/tmp") + "/dmrt-pool-source-" + std::to_string(getpid());
  const std::string path = base + ".pool", log = base + ".node.log";
  std::remove(path.c_str());
  pid_t node =
      spawn({node_bin, "--transport", "shm", "--pool", path, "--create", "--memory-mb", "64",
             "--compute-nodes", "2", "--service", "hstore-hts", "--service", "hstore-sls"},
            log);
  ASSERT_GT(node, 0);
  pid_t compute[2];
  for (unsigned r = 0; r < 2; ++r) {
    compute[r] = fork();
    if (compute[r] == 0) {
      int rc = 2;
      try {
        rc = compute_process(path, r);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "compute process %u: %s\n", r, e.what());
      }
      std::fflush(stderr);
      _exit(rc);
    }
    ASSERT_GT(compute[r], 0);
  }
  EXPECT_EQ(wait_exit(compute[0], 60), 0) << text_of(log);
  EXPECT_EQ(wait_exit(compute[1], 60), 0) << text_of(log);
  kill(node, SIGTERM);
  EXPECT_EQ(wait_exit(node, 30), 0) << text_of(log);
  const std::string text = text_of(log);
  EXPECT_NE(text.find("waits poll"), std::string::npos) << text;
  EXPECT_NE(text.find("closed shm pool '" + path + "'"), std::string::npos) << text;
  // The file stays, closed: a process attaching now waits for the next creator.
  try {
    shm::Pool::attach(shm::PoolSource{path, -1});
    ADD_FAILURE() << "a closed pool was attached";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("still being created"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  std::remove(log.c_str());
}

}  // namespace
}  // namespace dmrt
