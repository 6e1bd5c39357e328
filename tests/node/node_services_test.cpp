// dmrt-node's pieces on shm: the service registry (names, bits, flags, start), HStore's servers
// started through it before the index exists (as on a node program), and the echo service
// surviving bad messages.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "dmrt/indexes/hstore/hstore.h"
#include "dmrt/policies/shm/service.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/messaging.h"
#include "tests/runtime/test_cluster.h"
#include "tools/dmrt-node/echo.h"
#include "tools/dmrt-node/node.h"
#include "tools/dmrt-node/services.h"

namespace dmrt::node {
// node.h's wait loop asks main.cpp's signal flag; these tests have no signals.
bool signalled() {
  return false;
}
}  // namespace dmrt::node

namespace dmrt {
namespace {

using node::Services;
using testing::ShmClient;

// Records what a registration asks for instead of starting anything.
class RecordingLauncher : public ServiceLauncher<ShmTransport> {
 public:
  NodeId node() const override { return 0; }
  void launch(std::string_view what, unsigned fibers, ServiceBody<ShmTransport> body) override {
    launched.push_back({std::string(what), fibers});
    EXPECT_TRUE(body != nullptr);
  }
  std::vector<std::pair<std::string, unsigned>> launched;
};

TEST(ServiceRegistry, NamesBitsAndLookup) {
  ASSERT_EQ(Services::kServices.size(), 3u);
  ASSERT_NE(Services::find("rolex"), nullptr);
  EXPECT_EQ(service_bit(*Services::find("rolex")), 1u);  // bit 0: what dmrt-bench's ROLEX reads
  EXPECT_NE(Services::find("hstore-hts"), nullptr);
  EXPECT_NE(Services::find("hstore-sls"), nullptr);
  EXPECT_EQ(Services::find("hstore"), nullptr);
  uint64_t all = 0;
  for (const ServiceInfo& s : Services::kServices) {
    EXPECT_EQ(all & service_bit(s), 0u) << s.name;
    all |= service_bit(s);
    EXPECT_FALSE(s.summary.empty());
  }
  EXPECT_EQ(Services::names(), "rolex, hstore-hts, hstore-sls");
}

TEST(ServiceRegistry, DistinctCheckRefusesSharedNamesAndBits) {
  using detail::distinct_services;
  EXPECT_TRUE(distinct_services(std::array<ServiceInfo, 2>{{{"a", "", 0}, {"b", "", 1}}}));
  EXPECT_FALSE(distinct_services(std::array<ServiceInfo, 2>{{{"a", "", 0}, {"a", "", 1}}}));
  EXPECT_FALSE(distinct_services(std::array<ServiceInfo, 2>{{{"a", "", 3}, {"b", "", 3}}}));
  EXPECT_FALSE(distinct_services(std::array<ServiceInfo, 1>{{{"a", "", 64}}}));
}

TEST(ServiceRegistry, StartsByNameWithItsFlags) {
  Services reg;
  CLI::App app;
  auto groups = reg.add_flags(app);
  ASSERT_EQ(groups.size(), 3u);
  for (auto* g : groups) ASSERT_NE(g, nullptr);
  std::vector<std::string> argv = {"--hstore-hts-fibers", "9", "--rolex-root-slot", "7"};
  std::reverse(argv.begin(), argv.end());  // CLI11 takes them last first
  app.parse(argv);
  RecordingLauncher l;
  EXPECT_EQ(reg.start("hstore-hts", l), service_bit(hstore::HtsService::kInfo));
  EXPECT_EQ(reg.start("hstore-sls", l), service_bit(hstore::SlsService::kInfo));
  EXPECT_EQ(reg.start("rolex", l), service_bit(rolex::RetrainService::kInfo));
  ASSERT_EQ(l.launched.size(), 3u);
  EXPECT_EQ(l.launched[0], (std::pair<std::string, unsigned>{"hstore-hts", 9}));
  EXPECT_EQ(l.launched[1], (std::pair<std::string, unsigned>{"hstore-sls", 7}));  // 1 + 4 + 2
  EXPECT_EQ(l.launched[2], (std::pair<std::string, unsigned>{"rolex", 1}));
  EXPECT_EQ(reg.describe("rolex"), "root slot 7");
  EXPECT_THROW(reg.start("nope", l), ConfigError);
}

TEST(ServiceRegistry, FlagsOutOfRangeAreRefused) {
  for (std::vector<std::string> bad : {std::vector<std::string>{"--rolex-root-slot", "64"},
                                       {"--hstore-hts-fibers", "1"},
                                       {"--hstore-sls-fibers", "99999999999999999999"},
                                       {"--hstore-sls-root-slot", "-1"}}) {
    Services reg;
    CLI::App app;
    reg.add_flags(app);
    std::reverse(bad.begin(), bad.end());
    EXPECT_THROW(app.parse(bad), CLI::ParseError) << bad.back();
  }
}

// A shm host for the registry, as a shm build of dmrt-node would have.
using ShmLauncher = node::Launcher<ShmTransport, shm::ServiceHost>;
ShmLauncher shm_launcher(const std::shared_ptr<shm::Pool>& pool, NodeId node) {
  return ShmLauncher(node, [pool, node](unsigned fibers, ServiceBody<ShmTransport> body) {
    return std::make_unique<shm::ServiceHost>(pool, node, fibers, std::move(body));
  });
}

// As on dmrt-node: the servers start first and wait for the meta; the compute side creates the
// index later, finds the servers through the services word and waits until both serve.
TEST(NodeServices, HStoreServersStartedBeforeTheIndex) {
  auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
  Services reg;
  auto launcher = shm_launcher(pool, 0);
  node::NodeArgs args;
  args.echo = false;
  args.services = {"hstore-hts", "hstore-sls"};
  node::EchoCounters echo;
  uint64_t word = node::start_services(args, reg, launcher, echo);
  EXPECT_EQ(word, service_bit(hstore::HtsService::kInfo) | service_bit(hstore::SlsService::kInfo));
  local::store_word(pool->region(0).base + layout::kServicesOffset, word);

  ShmClient setup = testing::make_client(pool, 400);
  hstore::Options o;
  o.expected_keys = 4096;
  auto index = hstore::Index<ShmTransport>::create(setup, o);
  EXPECT_EQ(setup.read_value<uint64_t>(layout::services_word(0)), word);
  uint64_t t0 = setup.now_ns();
  for (;;) {
    uint64_t s = hstore::read_status(setup, index->meta());
    if (hstore::status::hts_up(s) && hstore::status::sls_up(s)) break;
    ASSERT_LT(setup.now_ns() - t0, 60'000'000'000ull) << "servers never came up";
    setup.pause();
  }
  ShmClient c(shm::Endpoint(pool, pool->config().compute_nodes()[0], 1));
  auto h = index->handle(c);
  for (Key k = 1; k <= 200; ++k) ASSERT_TRUE(h.insert(k, "v" + std::to_string(k)));
  std::string out;
  ASSERT_TRUE(h.search(77, out));
  EXPECT_EQ(out, "v77");
  std::vector<std::pair<Key, std::string>> rows;
  h.scan(10, 5, rows);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].first, 10u);
  EXPECT_EQ(rows[4].first, 14u);
  EXPECT_TRUE(launcher.stop_all());
}

// An index needing more server fibers than the host started is refused, not left half-served.
TEST(NodeServices, HtsWithTooFewFibersRefuses) {
  auto pool = testing::small_pool(1, 1, uint64_t{128} << 20);
  Services reg;
  CLI::App app;
  reg.add_flags(app);
  app.parse(std::vector<std::string>{"3", "--hstore-hts-fibers"});
  auto launcher = shm_launcher(pool, 0);
  reg.start("hstore-hts", launcher);
  ShmClient setup = testing::make_client(pool, 400);
  hstore::Options o;
  o.expected_keys = 4096;
  o.logs = 4;  // needs 5 fibers
  auto index = hstore::Index<ShmTransport>::create(setup, o);
  // The HTS fails as soon as it has read the meta, and its waiting fibers end with it: the host
  // reports the failure by itself (dmrt-node then stops), and why when stopped.
  for (int i = 0; !launcher.any_failed(); ++i) {
    ASSERT_LT(i, 6000) << "the HTS host never reported its failure";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(launcher.stop_all());
}

// Produces a message whose length field exceeds a slot, the way a buggy or hostile producer
// could: claim the slot, write the header, publish.
void push_malformed(std::byte* ring_base, const MailboxGeometry& g) {
  std::byte* tail = ring_base + MailboxRing::kTailOffset;
  uint64_t pos = local::load_word(tail);
  std::byte* s = ring_base + MailboxRing::kSlotsOffset + (pos % g.slots) * g.slot_bytes;
  // The ring's producer protocol: the slot is ours once the consumer has handed it back (its
  // sequence word says pos), not merely once the head has passed it.
  while (local::load_word(s) != pos) std::this_thread::yield();
  local::store_word(tail, pos + 1);
  uint64_t w1 = 1 /* from node 1 */ | (uint64_t{5} << 32);
  uint64_t w2 = node::kEchoTag | (uint64_t{0xffffffff} << 32);  // a 4 GiB payload
  std::memcpy(s + 8, &w1, 8);
  std::memcpy(s + 16, &w2, 8);
  local::store_word(s, pos + 1);
}

TEST(NodeEcho, SurvivesAndCountsBadMessages) {
  auto pool = testing::small_pool(1, 1);
  const MailboxGeometry& g = pool->config().mailbox;
  auto launcher = shm_launcher(pool, 0);
  node::EchoCounters counters;
  launcher.launch("echo", 1, node::echo_service<ShmTransport>(counters, 50));
  NodeId cn = pool->config().compute_nodes()[0];
  ShmClient c(shm::Endpoint(pool, cn, 3));
  std::byte* inbox = pool->region(0).base + layout::mailbox_offset(g, 0);
  // More bad messages than the inbox has slots: each slot must come back for the next one.
  const unsigned bad = 2 * g.slots + 1;
  for (unsigned i = 0; i < bad; ++i) push_malformed(inbox, g);
  // A reply to a node that does not exist fails too, and is counted.
  MessageHeader to_nowhere{};
  to_nowhere.from_node = 999;
  to_nowhere.reply_mailbox = 1;
  to_nowhere.tag = node::kEchoTag;
  while (!MailboxRing(inbox, g).try_push(to_nowhere, {})) std::this_thread::yield();
  for (int i = 0; i < 3 * static_cast<int>(g.slots); ++i) {
    uint64_t x = 1000 + i;
    Message m = c.call(0, 0, node::kEchoTag, {reinterpret_cast<const std::byte*>(&x), 8});
    ASSERT_EQ(m.tag, node::kEchoTag + 1);
    ASSERT_EQ(m.payload.size(), 8u);
    EXPECT_EQ(std::memcmp(m.payload.data(), &x, 8), 0);
  }
  // The service counts an answer after sending it: the last one may still be on its way.
  for (int i = 0; i < 5000 && counters.answered.load() < 3u * g.slots; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(counters.bad.load(), bad + 1);
  EXPECT_EQ(counters.answered.load(), 3u * g.slots);
  EXPECT_TRUE(launcher.stop_all());
}

}  // namespace
}  // namespace dmrt
