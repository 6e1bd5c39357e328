// Hostile-input tests of the verbs node bootstrap, run against the fake RDMA device
// (tests/fakeverbs, preloaded): connection floods, half-open connections, unauthenticated and
// wrongly authenticated requests, replayed barriers and clock requests, and a departed peer's QPs.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dmrt/policies/verbs/auth.h"
#include "dmrt/policies/verbs/bootstrap.h"
#include "dmrt/policies/verbs/service.h"
#include "dmrt/policies/verbs/transport.h"
#include "dmrt/policies/verbs/wire.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/messaging.h"
#include "tools/dmrt-node/echo.h"

extern char** environ;

namespace dmrt {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const char* g_node_binary = nullptr;  // argv[1]: dmrt-node
constexpr const char* kSecret = "hostile-test-secret-0123456789";

int live_qps() {
  using Fn = int (*)();
  static auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "dmrt_fakeverbs_live_qps"));
  if (!fn) throw std::runtime_error("the fake RDMA device is not preloaded");
  return fn();
}

long status_field(const char* key) {  // from /proc/self/status, e.g. "Threads:", "VmRSS:" (kB)
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::strlen(key)));
  return -1;
}

size_t task_count() {
  size_t n = 0;
  for (auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)e;
    ++n;
  }
  return n;
}

// Waits up to `limit` for `pred`; returns whether it held.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 10s) {
  auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

ClusterConfig two_nodes(uint16_t port) {
  ClusterConfig c;
  c.mailbox.mailboxes = 4;
  c.mailbox.slots = 4;
  c.mailbox.slot_bytes = 256;
  NodeSpec m;
  m.role = NodeRole::kMemory;
  m.region_bytes = 4 << 20;
  m.address = "127.0.0.1:" + std::to_string(port);
  NodeSpec k;
  k.role = NodeRole::kCompute;
  k.region_bytes = 2 << 20;
  c.nodes = {m, k};
  c.validate();
  return c;
}

// A raw TCP connection to the bootstrap, closed with a reset (no TIME_WAIT left behind, so tens
// of thousands of them do not exhaust the ephemeral ports).
int raw_connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  return fd;
}

class Bootstrap : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("DMRT_CLUSTER_SECRET", kSecret, 1);
    verbs::Options o;
    o.bootstrap_frame_timeout_ms = 500;
    o.connect_timeout_ms = 3000;
    server_ = std::make_unique<verbs::Cluster>(two_nodes(0), 0, o);
    port_ = server_->listen_port();
    config_ = two_nodes(port_);
    address_ = "127.0.0.1:" + std::to_string(port_);
    ASSERT_TRUE(server_->authenticated());
  }
  void TearDown() override {
    server_.reset();
    unsetenv("DMRT_CLUSTER_SECRET");
  }
  // A CONNECT request for `count` QPs as compute node 1 would send it.
  std::vector<uint8_t> connect_request(uint16_t count) const {
    verbs::wire::ConnectRequest c;
    c.from = 1;
    c.target = 0;
    c.nodes = 2;
    c.region_bytes = 4 << 20;
    c.mailboxes = 4;
    c.slots = 4;
    c.slot_bytes = 256;
    for (uint16_t i = 0; i < count; ++i) {
      verbs::wire::QpInfo q;
      q.qpn = 0x9000 + i;
      q.mtu = IBV_MTU_1024;
      c.qps.push_back(q);
    }
    verbs::wire::Writer w(verbs::wire::Type::kConnect);
    verbs::wire::write(w, c);
    return w.data();
  }
  std::unique_ptr<verbs::Cluster> server_;
  uint16_t port_ = 0;
  ClusterConfig config_;
  std::string address_;
};

TEST_F(Bootstrap, Survives40000ShortConnectionsWithBoundedThreadsAndMemory) {
  const size_t threads0 = task_count();
  const long rss0 = status_field("VmRSS:");
  size_t max_threads = threads0;
  for (int i = 0; i < 40000; ++i) {
    int fd = raw_connect(port_);
    ASSERT_GE(fd, 0) << "connection " << i << " refused: " << std::strerror(errno);
    close(fd);
    if (i % 2000 == 0) max_threads = std::max(max_threads, task_count());
  }
  EXPECT_LE(max_threads, threads0) << "the bootstrap started threads per connection";
  // The last connections may still wait in the accept queue; the kernel may also drop a few
  // that were reset before they were accepted.
  eventually([&] {
    verbs::BootstrapStats s = server_->bootstrap_stats();
    return s.accepted >= 40000 && s.open == 0;
  });
  EXPECT_EQ(server_->bootstrap_stats().open, 0u);
  EXPECT_GE(server_->bootstrap_stats().accepted, 39000u);
  EXPECT_LT(status_field("VmRSS:") - rss0, 64 * 1024) << "kB grown over 40,000 connections";
  // Still serving: an authenticated STOP goes through.
  verbs::Cluster::stop_node(address_, 3000, &config_);
  EXPECT_TRUE(server_->stop_requested());
}

TEST_F(Bootstrap, Survives1500HalfOpenConnectionsWithBoundedThreadsAndMemory) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  ASSERT_GE(rl.rlim_max, 4000u) << "this test needs 4,000 descriptors (ulimit -n)";
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  const size_t threads0 = task_count();
  const long rss0 = status_field("VmRSS:");
  std::vector<int> fds;
  const uint8_t prefix_1mib[4] = {0, 0, 0x10, 0};      // 1 MiB: over the request limit
  const uint8_t prefix_200kib[4] = {0, 0x20, 0x3, 0};  // 200 KiB: allowed, never sent
  for (int i = 0; i < 1500; ++i) {
    int fd = raw_connect(port_);
    ASSERT_GE(fd, 0);
    const uint8_t* p = i % 2 ? prefix_1mib : prefix_200kib;
    ASSERT_EQ(send(fd, p, 4, MSG_NOSIGNAL), 4);
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(200ms);
  EXPECT_LE(task_count(), threads0);
  EXPECT_LT(status_field("VmRSS:") - rss0, 64 * 1024) << "kB held by 1,500 half-open connections";
  verbs::BootstrapStats s = server_->bootstrap_stats();
  EXPECT_LE(s.open, 64u) << "more unfinished requests held than the pending cap";
  // The frame deadline (500 ms here) frees every slot; then a real request is served.
  EXPECT_TRUE(eventually([&] { return server_->bootstrap_stats().open == 0; }, 5s));
  s = server_->bootstrap_stats();
  EXPECT_GT(s.refused_busy + s.bad_frames + s.timed_out, 0u);
  verbs::Cluster::stop_node(address_, 3000, &config_);
  EXPECT_TRUE(server_->stop_requested());
  for (int fd : fds) close(fd);
}

TEST_F(Bootstrap, RefusesUnauthenticatedStopAndConnect) {
  const int qps0 = live_qps();
  // A client without the secret is told it needs one.
  try {
    verbs::bootstrap_call(
        address_, [](uint64_t) { return verbs::wire::Writer(verbs::wire::Type::kStop).data(); },
        nullptr, 3000, "node 0");
    FAIL() << "STOP without the secret was accepted";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("requires the cluster secret"), std::string::npos)
        << e.what();
  }
  // A raw client that ignores the hello and sends STOP and CONNECT with no MAC: refused, no QPs.
  for (auto req : {verbs::wire::Writer(verbs::wire::Type::kStop).data(), connect_request(4)}) {
    verbs::wire::Socket s = verbs::wire::Socket::connect(address_, 3000, "node 0");
    (void)s.receive_frame(3000);  // hello
    s.send_frame(req);
    s.send_frame(verbs::wire::Writer(verbs::wire::Type::kAuth).data());  // no nonce, no MAC
    verbs::wire::Reader r = s.receive(3000);
    ASSERT_EQ(r.type(), verbs::wire::Type::kError);
    EXPECT_NE(r.str().find("authentication failed"), std::string::npos);
  }
  EXPECT_FALSE(server_->stop_requested());
  EXPECT_EQ(live_qps(), qps0);
  EXPECT_EQ(server_->bootstrap_stats().server_qps, 0u);
  EXPECT_GE(server_->bootstrap_stats().auth_failures, 2u);
}

TEST_F(Bootstrap, RefusesWrongSecret) {
  verbs::ClusterKey wrong = verbs::ClusterKey::from_secret("not-the-cluster-secret-at-all");
  const int qps0 = live_qps();
  try {
    verbs::bootstrap_call(
        address_, [](uint64_t) { return verbs::wire::Writer(verbs::wire::Type::kStop).data(); },
        &wrong, 3000, "node 0");
    FAIL() << "STOP with a wrong secret was accepted";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("authentication failed"), std::string::npos) << e.what();
  }
  try {
    verbs::bootstrap_call(
        address_, [&](uint64_t) { return connect_request(2); }, &wrong, 3000, "node 0");
    FAIL() << "CONNECT with a wrong secret was accepted";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("authentication failed"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(server_->stop_requested());
  EXPECT_EQ(live_qps(), qps0);
}

TEST_F(Bootstrap, RefusesReplayedBarrier) {
  verbs::ClusterKey key = verbs::ClusterKey::from_secret(kSecret);
  // Record a genuine barrier arrival (node 1 of 2 parties) as it crosses the wire.
  verbs::wire::Socket s = verbs::wire::Socket::connect(address_, 3000, "node 0");
  verbs::wire::Reader hello = s.receive(3000);
  ASSERT_EQ(hello.type(), verbs::wire::Type::kHello);
  hello.u8();
  verbs::Nonce server{};
  hello.bytes(server.data(), server.size());
  uint64_t gen = hello.u64();
  verbs::wire::Writer bw(verbs::wire::Type::kBarrier);
  bw.u64(gen).u64(1).u32(2).u16(1);
  verbs::Nonce client = verbs::random_nonce();
  verbs::Mac mac = key.mac(verbs::kRequestLabel, server, client, bw.data());
  verbs::wire::Writer aw(verbs::wire::Type::kAuth);
  aw.bytes(client.data(), client.size()).bytes(mac.data(), mac.size());
  s.send_frame(bw.data());
  s.send_frame(aw.data());  // parked: one of two parties

  // Replaying the recorded bytes on a new connection: the server's nonce differs, so the MAC
  // does not verify.
  {
    verbs::wire::Socket r = verbs::wire::Socket::connect(address_, 3000, "node 0");
    (void)r.receive_frame(3000);
    r.send_frame(bw.data());
    r.send_frame(aw.data());
    verbs::wire::Reader ans = r.receive(3000);
    ASSERT_EQ(ans.type(), verbs::wire::Type::kError);
    EXPECT_NE(ans.str().find("authentication failed"), std::string::npos);
  }
  auto arrive = [&](uint64_t g, uint64_t id, NodeId from) {
    verbs::BootstrapCall c = verbs::bootstrap_call(
        address_,
        [&](uint64_t) {
          verbs::wire::Writer w(verbs::wire::Type::kBarrier);
          w.u64(g).u64(id).u32(2).u16(from);
          return w.data();
        },
        &key, 3000, "node 0");
    return verbs::wire::Reader(std::move(c.reply), "node 0");
  };
  // The same node arriving again (a replay re-signed by a secret holder) does not count.
  verbs::wire::Reader twice = arrive(gen, 1, 1);
  ASSERT_EQ(twice.type(), verbs::wire::Type::kError);
  EXPECT_NE(twice.str().find("arrived twice"), std::string::npos);
  // A stranger from another run (another generation) cannot pass it either.
  verbs::wire::Reader stranger = arrive(gen + 2, 1, 2);
  ASSERT_EQ(stranger.type(), verbs::wire::Type::kError);
  EXPECT_NE(stranger.str().find("generation"), std::string::npos);
  // The rightful second party passes it, and the parked first one is released.
  verbs::wire::Reader ok = arrive(gen, 1, 0);
  EXPECT_EQ(ok.type(), verbs::wire::Type::kBarrierOk);
  verbs::wire::Reader first = s.receive(3000);
  EXPECT_EQ(first.type(), verbs::wire::Type::kBarrierOk);
  // Once passed, arriving at it again is a replay.
  verbs::wire::Reader late = arrive(gen, 1, 1);
  ASSERT_EQ(late.type(), verbs::wire::Type::kError);
  EXPECT_NE(late.str().find("already passed"), std::string::npos);
}

// CLOCK: several authenticated requests on one connection are answered; one with a bad MAC, one
// without a MAC, and one replayed or out of turn on its connection are refused.
TEST_F(Bootstrap, ClockRequestsAreAnsweredOnlyWhenAuthenticatedAndInTurn) {
  verbs::ClusterKey key = verbs::ClusterKey::from_secret(kSecret);
  auto clock_request = [](uint64_t gen, uint32_t seq) {
    verbs::wire::ClockRequest q;
    q.generation = gen;
    q.seq = seq;
    q.from = 1;
    verbs::wire::Writer w(verbs::wire::Type::kClock);
    verbs::wire::write(w, q);
    return w.data();
  };
  // The Cluster's own measurement (a compute node measuring memory node 0): eight samples over
  // one connection.
  {
    verbs::Cluster client(config_, 1, {});
    const uint64_t accepted0 = server_->bootstrap_stats().accepted;
    ClockOffset c = client.clock_offset(0, 8);
    EXPECT_EQ(server_->bootstrap_stats().accepted, accepted0 + 1);
    EXPECT_LE(static_cast<uint64_t>(c.offset_ns < 0 ? -c.offset_ns : c.offset_ns), c.bound_ns);
    EXPECT_LT(c.bound_ns, 50'000'000u);
  }
  // By hand: three requests on one connection, each answered in turn with a clock that does not
  // run backwards.
  verbs::BootstrapCall call = verbs::bootstrap_open(address_, &key, 3000, "node 0");
  uint64_t last = 0;
  for (uint32_t i = 0; i < 3; ++i) {
    verbs::BootstrapTiming t;
    verbs::bootstrap_request(call, clock_request(call.generation, i), &key, 3000, &t);
    verbs::wire::Reader r(call.reply, "node 0");
    ASSERT_EQ(r.type(), verbs::wire::Type::kClockOk);
    verbs::wire::ClockAnswer a = verbs::wire::parse_clock_answer(r);
    EXPECT_EQ(a.seq, i);
    EXPECT_GE(a.now_ns, last);
    EXPECT_GE(a.now_ns, t.sent_ns);  // one host, one clock: read between sending and receiving
    EXPECT_LE(a.now_ns, t.received_ns);
    last = a.now_ns;
  }
  // The same request again on that connection (a replay, correctly MACed): refused, closed.
  try {
    verbs::bootstrap_request(call, clock_request(call.generation, 2), &key, 3000);
    verbs::wire::Reader r(call.reply, "node 0");
    ASSERT_EQ(r.type(), verbs::wire::Type::kError);
    EXPECT_NE(r.str().find("out of order"), std::string::npos);
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("out of order"), std::string::npos) << e.what();
  }
  EXPECT_THROW(call.socket.receive_frame(1000), TransportError);  // the server closed it

  const uint64_t failures0 = server_->bootstrap_stats().auth_failures;
  auto raw_clock = [&](bool sign_with_wrong_key) {
    verbs::wire::Socket s = verbs::wire::Socket::connect(address_, 3000, "node 0");
    verbs::wire::Reader hello = s.receive(3000);
    hello.u8();
    verbs::Nonce server{};
    hello.bytes(server.data(), server.size());
    std::vector<uint8_t> req = clock_request(hello.u64(), 0);
    s.send_frame(req);
    if (sign_with_wrong_key) {
      verbs::ClusterKey wrong = verbs::ClusterKey::from_secret("not-the-cluster-secret-at-all");
      verbs::Nonce client = verbs::random_nonce();
      verbs::Mac mac = wrong.mac(verbs::kRequestLabel, server, client, req);
      verbs::wire::Writer aw(verbs::wire::Type::kAuth);
      aw.bytes(client.data(), client.size()).bytes(mac.data(), mac.size());
      s.send_frame(aw.data());
    } else {
      s.send_frame(verbs::wire::Writer(verbs::wire::Type::kAuth).data());  // no nonce, no MAC
    }
    return s.receive(3000);
  };
  for (bool wrong : {true, false}) {
    verbs::wire::Reader r = raw_clock(wrong);
    ASSERT_EQ(r.type(), verbs::wire::Type::kError);
    EXPECT_NE(r.str().find("authentication failed"), std::string::npos);
  }
  EXPECT_EQ(server_->bootstrap_stats().auth_failures, failures0 + 2);
  // A client holding a wrong secret is told so and measures nothing.
  verbs::ClusterKey wrong = verbs::ClusterKey::from_secret("not-the-cluster-secret-at-all");
  try {
    verbs::BootstrapCall c = verbs::bootstrap_open(address_, &wrong, 3000, "node 0");
    verbs::bootstrap_request(c, clock_request(c.generation, 0), &wrong, 3000);
    FAIL() << "CLOCK with a wrong secret was answered";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("authentication failed"), std::string::npos) << e.what();
  }
  // Another run's generation, or a truncated request, correctly MACed: refused with the reason.
  {
    verbs::BootstrapCall c = verbs::bootstrap_open(address_, &key, 3000, "node 0");
    verbs::bootstrap_request(c, clock_request(c.generation + 2, 0), &key, 3000);
    verbs::wire::Reader r(c.reply, "node 0");
    ASSERT_EQ(r.type(), verbs::wire::Type::kError);
    EXPECT_NE(r.str().find("generation mismatch"), std::string::npos);
  }
  {
    verbs::BootstrapCall c = verbs::bootstrap_open(address_, &key, 3000, "node 0");
    std::vector<uint8_t> cut = clock_request(c.generation, 0);
    cut.resize(cut.size() - 1);
    verbs::bootstrap_request(c, cut, &key, 3000);
    verbs::wire::Reader r(c.reply, "node 0");
    ASSERT_EQ(r.type(), verbs::wire::Type::kError);
    EXPECT_NE(r.str().find("truncated"), std::string::npos);
  }
  // Still serving, and nothing was left open or pending.
  EXPECT_TRUE(eventually([&] { return server_->bootstrap_stats().open == 0; }, 5s));
  verbs::Cluster::stop_node(address_, 3000, &config_);
  EXPECT_TRUE(server_->stop_requested());
}

TEST_F(Bootstrap, ReleasesDepartedPeersQps) {
  const int qps0 = live_qps();
  {
    verbs::Options o;
    o.threads = 3;
    verbs::Cluster client(config_, 1, o);
    client.connect();
    EXPECT_EQ(server_->bootstrap_stats().server_qps, 3u);
    EXPECT_EQ(server_->bootstrap_stats().sessions, 1u);
    EXPECT_GT(live_qps(), qps0);
  }  // the client process's Cluster goes away: its sessions close
  EXPECT_TRUE(eventually([&] { return server_->bootstrap_stats().server_qps == 0; }, 5s));
  EXPECT_EQ(live_qps(), qps0);

  // A peer that takes its QPs and drops the connection (a crash) loses them too.
  verbs::ClusterKey key = verbs::ClusterKey::from_secret(kSecret);
  {
    verbs::BootstrapCall c = verbs::bootstrap_call(
        address_, [&](uint64_t) { return connect_request(5); }, &key, 3000, "node 0");
    ASSERT_EQ(verbs::wire::Reader(c.reply, "node 0").type(), verbs::wire::Type::kConnectOk);
    EXPECT_EQ(server_->bootstrap_stats().server_qps, 5u);
    EXPECT_EQ(live_qps(), qps0 + 5);
  }
  EXPECT_TRUE(eventually([&] { return server_->bootstrap_stats().server_qps == 0; }, 5s));
  EXPECT_EQ(live_qps(), qps0);
}

// A sequence word no producer or consumer can have written, in the inbox's next slot (any holder
// of the rkey can write it): the verbs consumer repairs the slot, the echo service counts it and
// keeps answering (it used to spin for ever, as on shm).
TEST_F(Bootstrap, EchoServiceSurvivesABogusSequenceWord) {
  const MailboxGeometry& g = server_->config().mailbox;
  std::byte* region = server_->local_region();
  std::byte* in = region + layout::mailbox_offset(g, 0);
  MailboxRing inbox(in, g);
  MailboxRing replies(region + layout::mailbox_offset(g, 1), g);
  uint64_t head = 0, bogus = uint64_t{1} << 40;
  std::memcpy(&head, in + MailboxRing::kHeadOffset, 8);
  std::memcpy(in + MailboxRing::kSlotsOffset + (head & (g.slots - 1)) * g.slot_bytes, &bogus, 8);
  node::EchoCounters stats;
  auto host = std::make_unique<verbs::ServiceHost>(*server_, 0, 1,
                                                   node::echo_service<VerbsTransport>(stats));
  EXPECT_TRUE(eventually([&] { return stats.bad.load() == 1; }, 10s))
      << "the bogus slot was not counted";
  const std::byte hi[2] = {std::byte{'h'}, std::byte{'i'}};
  EXPECT_TRUE(eventually(
      [&] {
        return inbox.try_push({0, 1, node::kEchoTag, 9}, hi);
      },
      10s))
      << "the slot was never repaired";
  Message m;
  const bool answered = eventually([&] { return replies.try_pop(m); }, 10s);
  host->stop();
  host.reset();
  ASSERT_TRUE(answered) << "the echo service stopped answering after a bogus sequence word";
  EXPECT_EQ(m.request_id, 9u);
  EXPECT_EQ(stats.answered.load(), 1u);
}

// Malformed mailbox messages: the echo service skips and counts them, keeps answering, and the
// ring keeps every slot (try_pop hands a bad message's slot back before it throws).
TEST_F(Bootstrap, EchoServiceSurvivesBadMessagesAndTheRingKeepsItsSlots) {
  const MailboxGeometry& g = server_->config().mailbox;
  std::byte* region = server_->local_region();
  MailboxRing inbox(region + layout::mailbox_offset(g, 0), g);
  MailboxRing replies(region + layout::mailbox_offset(g, 1), g);
  const std::byte hi[2] = {std::byte{'h'}, std::byte{'i'}};
  // 1: a length beyond the slot (written over a pushed message's header).
  ASSERT_TRUE(inbox.try_push({0, 1, node::kEchoTag, 7}, hi));
  uint64_t huge = uint64_t{node::kEchoTag} | (uint64_t{1} << 40);
  std::memcpy(region + layout::mailbox_offset(g, 0) + MailboxRing::kSlotsOffset + 16, &huge, 8);
  // 2: a reply address that does not exist (node 999).
  ASSERT_TRUE(inbox.try_push({999, 1, node::kEchoTag, 8}, hi));
  // 3: a good request from node 0 itself, answered into its mailbox 1.
  ASSERT_TRUE(inbox.try_push({0, 1, node::kEchoTag, 9}, hi));

  // dmrt-node's echo service (tools/dmrt-node/echo.h), hosted on client-thread slot 0 as the node
  // program hosts it.
  node::EchoCounters stats;
  auto host = std::make_unique<verbs::ServiceHost>(*server_, 0, 1,
                                                   node::echo_service<VerbsTransport>(stats));
  Message m;
  bool answered = eventually([&] { return replies.try_pop(m); }, 10s);
  EXPECT_TRUE(eventually([&] { return stats.bad.load() == 2; }, 10s));
  host->stop();
  host.reset();
  ASSERT_TRUE(answered) << "the echo service stopped answering after bad messages";
  EXPECT_EQ(m.request_id, 9u);
  EXPECT_EQ(m.tag, node::kEchoTag + 1);
  EXPECT_EQ(m.payload.size(), 2u);
  EXPECT_EQ(stats.answered.load(), 1u);
  EXPECT_EQ(stats.bad.load(), 2u);
  // Every slot of the inbox is free again: it takes `slots` messages.
  for (uint32_t i = 0; i < g.slots; ++i)
    EXPECT_TRUE(inbox.try_push({0, 1, 0, i}, hi)) << "slot " << i << " was lost";
  EXPECT_FALSE(inbox.try_push({0, 1, 0, 99}, hi));
}

TEST(BootstrapSecret, SecretFileFromTheClusterFileMustBePrivate) {
  unsetenv("DMRT_CLUSTER_SECRET");
  char tmpl[] = "/tmp/dmrt-secret-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  {
    std::ofstream(dir + "/cluster.secret") << "a-secret-of-enough-bytes\n";
    std::ofstream(dir + "/cluster.toml") << "secret_file = \"cluster.secret\"\n"
                                         << "[[node]]\nrole = \"memory\"\nregion = \"4MiB\"\n"
                                         << "address = \"127.0.0.1:0\"\n";
  }
  ClusterConfig c = ClusterConfig::from_toml_file(dir + "/cluster.toml");
  EXPECT_EQ(c.secret_file, dir + "/cluster.secret");  // named from the cluster file's folder
  chmod((dir + "/cluster.secret").c_str(), 0644);
  try {
    verbs::Cluster server(c, 0, {});
    FAIL() << "a world-readable secret file was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("readable by other users"), std::string::npos) << e.what();
  }
  chmod((dir + "/cluster.secret").c_str(), 0600);
  verbs::Cluster server(c, 0, {});
  EXPECT_TRUE(server.authenticated());
  std::filesystem::remove_all(dir);
}

TEST(BootstrapSecret, ClientWithASecretRefusesAnUnauthenticatedNode) {
  unsetenv("DMRT_CLUSTER_SECRET");
  verbs::Cluster open_node(two_nodes(0), 0, {});
  ASSERT_FALSE(open_node.authenticated());
  verbs::ClusterKey key = verbs::ClusterKey::from_secret(kSecret);
  try {
    verbs::bootstrap_call(
        "127.0.0.1:" + std::to_string(open_node.listen_port()),
        [](uint64_t) { return verbs::wire::Writer(verbs::wire::Type::kStop).data(); }, &key, 3000,
        "node 0");
    FAIL() << "a client holding the secret trusted a node without one";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("serves without a cluster secret"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(open_node.stop_requested());
}

TEST(BootstrapNoSecret, BindsLoopbackOnlyAndSaysSo) {
  unsetenv("DMRT_CLUSTER_SECRET");
  ClusterConfig c = two_nodes(0);
  c.nodes[0].address = "0.0.0.0:0";
  verbs::Cluster server(c, 0, {});
  EXPECT_FALSE(server.authenticated());
  EXPECT_NE(server.report().find("loopback only"), std::string::npos) << server.report();
}

// Loopback is decided on the resolved addresses, not on the spelling (issue 39): a host *name*
// that starts with "127." used to count as loopback, so an unauthenticated node bound whatever it
// resolved to (192.0.2.2 through a private /etc/hosts) and reported "(loopback only)".
TEST(BootstrapNoSecret, LoopbackIsDecidedOnResolvedAddresses) {
  using verbs::wire::resolves_to_loopback_only;
  std::string lit;
  EXPECT_TRUE(resolves_to_loopback_only("127.0.0.1", 7, &lit));
  EXPECT_EQ(lit, "127.0.0.1:7");
  EXPECT_TRUE(resolves_to_loopback_only("127.1.2.3", 7));
  EXPECT_TRUE(resolves_to_loopback_only("::1", 7, &lit));
  EXPECT_EQ(lit, "[::1]:7");
  EXPECT_TRUE(resolves_to_loopback_only("::ffff:127.0.0.1", 7));
  EXPECT_TRUE(resolves_to_loopback_only("localhost", 7));  // /etc/hosts: 127.0.0.1 and/or ::1
  // Spelt like loopback, but a name: it resolves to something else, or to nothing.
  EXPECT_FALSE(resolves_to_loopback_only("127.0.0.1.example.invalid", 7));
  EXPECT_FALSE(resolves_to_loopback_only("127.attacker", 7));
  EXPECT_FALSE(resolves_to_loopback_only("", 7));  // the wildcard
  EXPECT_FALSE(resolves_to_loopback_only("0.0.0.0", 7));
  EXPECT_FALSE(resolves_to_loopback_only("::", 7));
  EXPECT_FALSE(resolves_to_loopback_only("192.0.2.2", 7));
  EXPECT_FALSE(resolves_to_loopback_only("::ffff:192.0.2.2", 7));
  EXPECT_FALSE(resolves_to_loopback_only("128.0.0.1", 7));
  // The case found: a "127." name that /etc/hosts (private to a mount namespace) maps to
  // 192.0.2.2, and one that maps to a loopback address and another. Root only.
  pid_t pid = fork();
  if (pid == 0) {
    char hosts[] = "/tmp/dmrt-hosts-XXXXXX";
    int fd = mkstemp(hosts);
    const char text[] = "192.0.2.2 127.attacker\n127.0.0.5 127.both\n192.0.2.3 127.both\n";
    if (fd < 0 || write(fd, text, sizeof text - 1) < 0) _exit(2);
    close(fd);
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ||
        mount(hosts, "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) {
      unlink(hosts);
      _exit(77);
    }
    unlink(hosts);
    std::string bound;
    const bool attacker = resolves_to_loopback_only("127.attacker", 7, &bound);
    if (bound != "192.0.2.2:7") _exit(3);  // /etc/hosts is read: the test means something
    _exit(attacker || resolves_to_loopback_only("127.both", 7) ? 1 : 0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  if (WEXITSTATUS(st) != 77) {
    EXPECT_EQ(WEXITSTATUS(st), 0) << "a 127. name resolving elsewhere";
  } else {  // the cases above ran; this one is said not to, rather than passing silently
    std::printf("note: the private /etc/hosts case needs root (unshare, mount): not run\n");
  }
}

// A node whose address is a "127."-looking name that does not resolve to loopback serves on
// 127.0.0.1 only, and says it is not serving that name; a numeric loopback address other than
// 127.0.0.1 is kept (it is loopback).
TEST(BootstrapNoSecret, AHostNameThatLooksLikeLoopbackIsNotTrusted) {
  unsetenv("DMRT_CLUSTER_SECRET");
  ClusterConfig c = two_nodes(0);
  c.nodes[0].address = "127.0.0.1.example.invalid:0";
  {
    verbs::Cluster server(c, 0, {});
    EXPECT_FALSE(server.authenticated());
    const std::string r = server.report();
    EXPECT_NE(r.find("bound to loopback only (127.0.0.1:0, not 127.0.0.1.example.invalid)"),
              std::string::npos)
        << r;
  }
  c.nodes[0].address = "127.0.0.2:0";
  verbs::Cluster server(c, 0, {});
  const std::string r = server.report();
  EXPECT_NE(r.find("unauthenticated (loopback only, 127.0.0.2:0)"), std::string::npos) << r;
}

// dmrt-node itself under the fake device: starts, serves on loopback, refuses a STOP without the
// secret and obeys one with it.
TEST(BootstrapNode, DmrtNodeServesAndNeedsTheSecretToStop) {
  ASSERT_NE(g_node_binary, nullptr);
  uint16_t port;
  {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t l = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l);
    port = ntohs(a.sin_port);
    close(fd);
  }
  std::string nodes = "memory:8MiB@127.0.0.1:" + std::to_string(port) + ",compute:4MiB@";
  std::string address = "127.0.0.1:" + std::to_string(port);
  nodes += address;                           // the compute node's address is unused here
  setenv("DMRT_CLUSTER_SECRET", kSecret, 1);  // inherited by the child (with LD_PRELOAD)
  std::vector<std::string> args = {g_node_binary, "--nodes", nodes, "--node", "0"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, g_node_binary, nullptr, nullptr, argv.data(), environ), 0);
  ClusterConfig cfg;  // no secret_file: the key comes from the environment
  unsetenv("DMRT_CLUSTER_SECRET");
  EXPECT_THROW(verbs::Cluster::stop_node(address, 10000, &cfg), TransportError);
  setenv("DMRT_CLUSTER_SECRET", kSecret, 1);
  verbs::Cluster::stop_node(address, 10000, &cfg);
  int status = 0;
  bool exited = eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 10s);
  if (!exited) kill(pid, SIGKILL), waitpid(pid, &status, 0);
  EXPECT_TRUE(exited);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  unsetenv("DMRT_CLUSTER_SECRET");
}

// The issue's load: 64 idle connections from the client's own address, renewed at about 25 a
// second, each held as long as the server lets it (3 s here, as by default), while 50
// authenticated requests run. The oldest idle connection is evicted to make room, so each
// request is served; none is closed at accept.
TEST(BootstrapPressure, IdleConnectionsDoNotLockOutAuthenticatedRequests) {
  verbs::ClusterKey key = verbs::ClusterKey::from_secret(kSecret);
  std::atomic<int> stops{0};
  verbs::BootstrapHooks hooks;
  hooks.connect = [](verbs::wire::Reader&) { return verbs::ConnectAnswer{}; };
  hooks.stop = [&] { ++stops; };
  verbs::BootstrapLimits limits;           // defaults: 64 pending, 32 per peer
  limits.first_request_timeout_ms = 3000;  // idle connections live as long as the issue's did
  verbs::BootstrapServer server("127.0.0.1:0", key, hooks, limits, "node 0");
  const std::string address = "127.0.0.1:" + std::to_string(server.port());
  std::atomic<bool> done{false};
  std::thread idler([&] {
    std::vector<int> fds;
    for (int i = 0; i < 64; ++i) fds.push_back(raw_connect(server.port()));
    size_t next = 0;
    while (!done.load()) {  // renew one every 40 ms: each lives about 2.6 s
      std::this_thread::sleep_for(40ms);
      if (fds[next] >= 0) close(fds[next]);
      fds[next] = raw_connect(server.port());
      next = (next + 1) % fds.size();
    }
    for (int fd : fds)
      if (fd >= 0) close(fd);
  });
  std::this_thread::sleep_for(200ms);  // the idle connections are in place
  int ok = 0;
  std::string failures;
  for (int i = 0; i < 50; ++i) {
    try {
      verbs::BootstrapCall c = verbs::bootstrap_call(
          address, [](uint64_t) { return verbs::wire::Writer(verbs::wire::Type::kStop).data(); },
          &key, 3000, "node 0");
      verbs::wire::Reader r(std::move(c.reply), "node 0");
      if (r.type() == verbs::wire::Type::kStopOk) ++ok;
    } catch (const TransportError& e) {
      failures += std::string(e.what()) + "\n";
    }
    std::this_thread::sleep_for(40ms);
  }
  done.store(true);
  idler.join();
  verbs::BootstrapStats s = server.stats();
  EXPECT_EQ(ok, 50) << failures;
  EXPECT_EQ(stops.load(), 50);
  EXPECT_GT(s.evicted, 0u) << "the load never filled the pending connections";
  EXPECT_EQ(s.refused_busy, 0u);
}

// A peer at another address opening idle connections as fast as it can only evicts its own: it
// holds at most max_pending_per_peer of them, and requests from elsewhere are served at once.
TEST(BootstrapPressure, AFloodFromOneAddressEvictsOnlyItsOwn) {
  std::atomic<int> stops{0};
  verbs::BootstrapHooks hooks;
  hooks.connect = [](verbs::wire::Reader&) { return verbs::ConnectAnswer{}; };
  hooks.stop = [&] { ++stops; };
  verbs::BootstrapLimits limits;
  limits.first_request_timeout_ms = 3000;
  verbs::BootstrapServer server("127.0.0.1:0", std::nullopt, hooks, limits, "node 0");
  const std::string address = "127.0.0.1:" + std::to_string(server.port());
  std::vector<int> fds;
  for (int i = 0; i < 300; ++i) {  // from 127.0.0.2
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(0x7f000002);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src), 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(server.port());
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    fds.push_back(fd);
  }
  EXPECT_TRUE(eventually([&] { return server.stats().accepted >= 300; }, 5s));
  EXPECT_LE(server.stats().open, limits.max_pending_per_peer);
  for (int i = 0; i < 20; ++i)
    EXPECT_NO_THROW(verbs::bootstrap_call(
        address, [](uint64_t) { return verbs::wire::Writer(verbs::wire::Type::kStop).data(); },
        nullptr, 1000, "node 0"));
  EXPECT_EQ(stops.load(), 20);
  EXPECT_GE(server.stats().evicted, 300u - limits.max_pending_per_peer);
  for (int fd : fds) close(fd);
}

// A STOP that the node refuses at first (its port closed, then a listener that closes every
// connection at accept, as a node shedding load did) is retried with backoff and succeeds once
// the node serves; a node that never serves is named when the client gives up.
TEST(BootstrapPressure, ARefusedStopIsRetriedUntilTheNodeServes) {
  unsetenv("DMRT_CLUSTER_SECRET");
  uint16_t port;
  std::atomic<int> stops{0};
  std::unique_ptr<verbs::BootstrapServer> server;
  std::thread node;
  {
    auto shedder = std::make_unique<verbs::wire::Listener>("127.0.0.1:0");
    port = shedder->port();
    node = std::thread([&, l = std::move(shedder)]() mutable {
      auto end = Clock::now() + 400ms;
      while (Clock::now() < end) {
        verbs::wire::Socket s;
        l->accept(s, 20);  // and closed at once, before any hello
      }
      l.reset();
      std::this_thread::sleep_for(100ms);  // nothing listens: refused
      verbs::BootstrapHooks hooks;
      hooks.connect = [](verbs::wire::Reader&) { return verbs::ConnectAnswer{}; };
      hooks.stop = [&] { ++stops; };
      server = std::make_unique<verbs::BootstrapServer>("127.0.0.1:" + std::to_string(port),
                                                        std::nullopt, hooks,
                                                        verbs::BootstrapLimits{}, "node 0");
    });
  }
  const std::string address = "127.0.0.1:" + std::to_string(port);
  ClusterConfig cfg;
  auto t0 = Clock::now();
  verbs::Cluster::stop_node(address, 5000, &cfg);
  EXPECT_GE(Clock::now() - t0, 400ms);
  node.join();
  EXPECT_EQ(stops.load(), 1);
  server.reset();
  // Nobody there: the client gives up within its timeout and names the node.
  t0 = Clock::now();
  try {
    verbs::Cluster::stop_node(address, 300, &cfg);
    FAIL() << "a stop reached nobody";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("dmrt-node at " + address), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("attempts"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - t0, 1s);
}

// Without a secret, 10,000 barriers pass one after another (the table once filled at 4,096 for
// good); a replayed or late arrival for a passed or expired barrier is still refused.
TEST(BootstrapBarriers, TenThousandBarriersPassAndEndedIdsStayRefused) {
  verbs::BootstrapHooks hooks;
  hooks.connect = [](verbs::wire::Reader&) { return verbs::ConnectAnswer{}; };
  hooks.stop = [] {};
  verbs::BootstrapLimits limits;
  limits.barrier_timeout_ms = 300;
  verbs::BootstrapServer server("127.0.0.1:0", std::nullopt, hooks, limits, "node 0");
  const std::string address = "127.0.0.1:" + std::to_string(server.port());
  auto arrive = [&](uint64_t id, uint32_t parties, NodeId from) {
    verbs::BootstrapCall c = verbs::bootstrap_call(
        address,
        [&](uint64_t gen) {
          verbs::wire::Writer w(verbs::wire::Type::kBarrier);
          w.u64(gen).u64(id).u32(parties).u16(from);
          return w.data();
        },
        nullptr, 3000, "node 0");
    return verbs::wire::Reader(std::move(c.reply), "node 0");
  };
  auto local = [&](uint64_t id, uint32_t parties, NodeId from) {
    verbs::wire::Writer w(verbs::wire::Type::kBarrier);
    w.u64(server.generation()).u64(id).u32(parties).u16(from);
    return verbs::wire::Reader(server.handle_local(w.data()), "node 0");
  };
  int passed = 0;
  for (uint64_t id = 1; id <= 10000; ++id) {
    // One party each: odd ids in process, even ids over TCP.
    if (id % 2) {
      passed += local(id, 1, 0).type() == verbs::wire::Type::kBarrierOk;
    } else {
      passed += arrive(id, 1, 1).type() == verbs::wire::Type::kBarrierOk;
    }
  }
  EXPECT_EQ(passed, 10000);
  EXPECT_EQ(server.stats().open_barriers, 0u);
  // Two parties, one parked over TCP until the other arrives in process.
  std::thread parked([&] { EXPECT_EQ(arrive(10001, 2, 1).type(), verbs::wire::Type::kBarrierOk); });
  EXPECT_TRUE(eventually([&] { return server.stats().open_barriers == 1; }, 2s));
  EXPECT_EQ(local(10001, 2, 0).type(), verbs::wire::Type::kBarrierOk);
  parked.join();
  for (uint64_t id : {1ull, 5000ull, 10000ull, 10001ull}) {
    verbs::wire::Reader late = arrive(id, 1, 1);
    ASSERT_EQ(late.type(), verbs::wire::Type::kError) << id;
    EXPECT_NE(late.str().find("already passed"), std::string::npos) << late.str();
  }
  // An abandoned barrier expires (its waiter is told), and then stays refused.
  verbs::wire::Reader lonely = arrive(20000, 2, 1);
  ASSERT_EQ(lonely.type(), verbs::wire::Type::kError);
  EXPECT_NE(lonely.str().find("timed out"), std::string::npos) << lonely.str();
  EXPECT_EQ(server.stats().open_barriers, 0u);
  verbs::wire::Reader after = arrive(20000, 2, 0);
  ASSERT_EQ(after.type(), verbs::wire::Type::kError);
  EXPECT_NE(after.str().find("expired"), std::string::npos) << after.str();
  // Ids far apart still pass (their ends are remembered one by one).
  EXPECT_EQ(arrive(1ull << 40, 1, 1).type(), verbs::wire::Type::kBarrierOk);
  EXPECT_EQ(arrive(30000, 1, 1).type(), verbs::wire::Type::kBarrierOk);
}

}  // namespace
}  // namespace dmrt

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc > 1) dmrt::g_node_binary = argv[1];
  return RUN_ALL_TESTS();
}
