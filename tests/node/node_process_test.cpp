// The dmrt-node program on shm, as a process of its own: it attaches to a named pool, hosts
// HStore's two servers and the echo service, advertises them in the services word, and exits
// cleanly on SIGTERM with the count of bad messages it skipped. DMRT_NODE names the binary.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "dmrt/indexes/hstore/detail/services.h"
#include "dmrt/indexes/hstore/hstore.h"
#include "dmrt/runtime/clock_messages.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/messaging.h"
#include "dmrt/runtime/services_word.h"
#include "tests/runtime/test_cluster.h"
#include "tools/dmrt-node/echo.h"

namespace dmrt {
namespace {

using testing::ShmClient;

std::string node_binary() {
  const char* p = std::getenv("DMRT_NODE");
  return p ? p : "";
}

// Runs dmrt-node with `args`, its stdout and stderr into `log`.
pid_t spawn_node(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (!f || dup2(fileno(stdout), 2) < 0) _exit(120);
    std::vector<char*> argv;
    std::string bin = node_binary();
    argv.push_back(bin.data());
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(121);
  }
  return pid;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Exit status of `pid` once it exits, or -1 after ~30 s (then it is killed).
int wait_exit(pid_t pid) {
  for (int i = 0; i < 3000; ++i) {
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

TEST(NodeProcess, ShmNodeHostsHStoreServers) {
  ASSERT_FALSE(node_binary().empty()) << "set DMRT_NODE to the dmrt-node binary";
  std::string name = "nodetest" + std::to_string(getpid());
  auto pool = shm::Pool::create(
      ClusterConfig::embedded(1, 1, uint64_t{128} << 20, uint64_t{8} << 20), name);
  std::string log = "/tmp/dmrt-node-test-" + std::to_string(getpid()) + ".log";
  pid_t node = spawn_node({"--transport", "shm", "--pool", name, "--node", "0", "--service",
                           "hstore-hts", "--service", "hstore-sls"},
                          log);
  ASSERT_GT(node, 0);
  ShmClient setup = testing::make_client(pool, 400);
  const uint64_t want =
      service_bit(hstore::HtsService::kInfo) | service_bit(hstore::SlsService::kInfo);
  // The word carries the ready bit, which await_services strips; 30 s of patience.
  // The word carries the clock bit too: its echo service answers clock requests.
  EXPECT_EQ(await_services(setup, 0), want | layout::kServicesClock) << read_file(log);
  EXPECT_EQ(setup.read_value<uint64_t>(layout::services_word(0)),
            want | layout::kServicesClock | layout::kServicesReady);
  // Measured through the pool's mailboxes against a process on this host, so on one clock: the
  // true offset is 0, and it must lie within the bound.
  const ClockOffset clock = measure_clock_offset(setup, 0);
  EXPECT_LT(clock.bound_ns, uint64_t{1'000'000'000});
  EXPECT_LE(static_cast<uint64_t>(std::abs(clock.offset_ns)), clock.bound_ns);
  hstore::Options o;
  o.expected_keys = 4096;
  auto index = hstore::Index<ShmTransport>::create(setup, o);
  ShmClient c(shm::Endpoint(pool, 1, 1));
  auto h = index->handle(c);
  for (Key k = 1; k <= 300; ++k) ASSERT_TRUE(h.insert(k, "v" + std::to_string(k)));
  ASSERT_TRUE(h.update(5, "five"));
  std::string out;
  ASSERT_TRUE(h.search(5, out));
  EXPECT_EQ(out, "five");
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(100, 3, rows);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2], (std::pair<Key, std::string>{102, "v102"}));

  // A message the echo service cannot answer (a reply to a node that does not exist), then a
  // good one: the node answers the second and counts the first.
  MessageHeader bad{};
  bad.from_node = 777;
  bad.reply_mailbox = 1;
  bad.tag = node::kEchoTag;
  std::byte* inbox = pool->region(0).base + layout::mailbox_offset(pool->config().mailbox, 0);
  ASSERT_TRUE(MailboxRing(inbox, pool->config().mailbox).try_push(bad, {}));
  uint64_t x = 42;
  Message m = c.call(0, 0, node::kEchoTag, {reinterpret_cast<const std::byte*>(&x), 8});
  EXPECT_EQ(m.tag, node::kEchoTag + 1);

  kill(node, SIGTERM);
  EXPECT_EQ(wait_exit(node), 0) << read_file(log);
  std::string text = read_file(log);
  EXPECT_NE(text.find("runs service hstore-hts"), std::string::npos) << text;
  EXPECT_NE(text.find("skipped 1 bad messages"), std::string::npos) << text;
  std::remove(log.c_str());
}

// A hosted service that fails (here: an index needing more HTS fibers than the node started)
// stops the node with the reason, rather than leaving compute nodes waiting for answers.
TEST(NodeProcess, StopsWhenAServiceFails) {
  ASSERT_FALSE(node_binary().empty()) << "set DMRT_NODE to the dmrt-node binary";
  std::string name = "nodefail" + std::to_string(getpid());
  auto pool = shm::Pool::create(
      ClusterConfig::embedded(1, 1, uint64_t{128} << 20, uint64_t{8} << 20), name);
  std::string log = "/tmp/dmrt-node-test-" + std::to_string(getpid()) + "-fail.log";
  pid_t node = spawn_node({"--transport", "shm", "--pool", name, "--node", "0", "--no-echo",
                           "--service", "hstore-hts", "--hstore-hts-fibers", "2"},
                          log);
  ASSERT_GT(node, 0);
  ShmClient setup = testing::make_client(pool, 400);
  EXPECT_EQ(await_services(setup, 0), service_bit(hstore::HtsService::kInfo)) << read_file(log);
  hstore::Options o;
  o.expected_keys = 4096;
  o.logs = 4;
  auto index = hstore::Index<ShmTransport>::create(setup, o);
  EXPECT_EQ(wait_exit(node), 1) << read_file(log);
  std::string text = read_file(log);
  EXPECT_NE(text.find("service hstore-hts failed"), std::string::npos) << text;
  EXPECT_NE(text.find("it needs 5"), std::string::npos) << text;
  std::remove(log.c_str());
}

// One host per service (dmrt/runtime/service_claim.h): a second dmrt-node for HStore's HTS while
// the first serves is refused, naming the service; once the first is killed (kill -9: no release),
// a replacement takes both servers over after the lease and the index answers again, with its keys.
TEST(NodeProcess, ASecondHostIsRefusedAndADeadOnesReplacementServes) {
  ASSERT_FALSE(node_binary().empty()) << "set DMRT_NODE to the dmrt-node binary";
  std::string name = "nodeclaim" + std::to_string(getpid());
  auto pool = shm::Pool::create(
      ClusterConfig::embedded(1, 1, uint64_t{128} << 20, uint64_t{8} << 20), name);
  const std::string base = "/tmp/dmrt-node-test-" + std::to_string(getpid());
  const std::vector<std::string> both = {"--transport", "shm",       "--pool",    name,
                                         "--node",      "0",         "--no-echo", "--service",
                                         "hstore-hts",  "--service", "hstore-sls"};
  pid_t first = spawn_node(both, base + "-first.log");
  ASSERT_GT(first, 0);
  ShmClient setup = testing::make_client(pool, 400);
  ASSERT_NE(await_services(setup, 0), 0u) << read_file(base + "-first.log");
  hstore::Options o;
  o.expected_keys = 4096;
  auto index = hstore::Index<ShmTransport>::create(setup, o);
  ShmClient c(shm::Endpoint(pool, 1, 1));
  {
    auto h = index->handle(c);
    for (Key k = 1; k <= 100; ++k) ASSERT_TRUE(h.insert(k, "v" + std::to_string(k)));
  }

  pid_t second = spawn_node(
      {"--transport", "shm", "--pool", name, "--node", "0", "--no-echo", "--service", "hstore-hts"},
      base + "-second.log");
  EXPECT_EQ(wait_exit(second), 1) << read_file(base + "-second.log");
  std::string text = read_file(base + "-second.log");
  EXPECT_NE(text.find("hstore-hts of the index at root slot"), std::string::npos) << text;
  EXPECT_NE(text.find("is already served by another host"), std::string::npos) << text;

  kill(first, SIGKILL);
  waitpid(first, nullptr, 0);
  pid_t third = spawn_node(both, base + "-third.log");
  {
    auto h = index->handle(c);
    ASSERT_TRUE(h.insert(1000, "after")) << read_file(base + "-third.log");
    std::string out;
    ASSERT_TRUE(h.search(50, out));
    EXPECT_EQ(out, "v50");
    std::vector<std::pair<Key, std::string>> rows;
    h.scan(99, 3, rows);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[2], (std::pair<Key, std::string>{1000, "after"}));
  }
  EXPECT_EQ(index->stats(setup).at("server_takeovers"), 2.0);
  kill(third, SIGTERM);
  EXPECT_EQ(wait_exit(third), 0) << read_file(base + "-third.log");
  for (const char* s : {"-first.log", "-second.log", "-third.log"}) std::remove((base + s).c_str());
}

TEST(NodeProcess, RefusesBadCommandLines) {
  ASSERT_FALSE(node_binary().empty()) << "set DMRT_NODE to the dmrt-node binary";
  std::string log = "/tmp/dmrt-node-test-" + std::to_string(getpid()) + "-bad.log";
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--transport", "shm", "--pool", "nosuchpool", "--node", "0"},
        {"--transport", "shm", "--pool", "p", "--node", "99999999999999999999"},
        {"--transport", "shm", "--pool", "p", "--node", "0", "--service", "nosuch"},
        {"--transport", "shm", "--pool", "p", "--node", "0", "--hstore-hts-fibers", "9"},
        {"--transport", "shm", "--pool", "p", "--node", "0", "--service", "rolex", "--service",
         "rolex"},
        {"--transport", "nosuch"}}) {
    pid_t p = spawn_node(args, log);
    int rc = wait_exit(p);
    EXPECT_NE(rc, 0) << args.back();
    EXPECT_NE(rc, -1) << args.back();
  }
  std::remove(log.c_str());
}

}  // namespace
}  // namespace dmrt
