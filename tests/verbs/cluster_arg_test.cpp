// `--nodes role:size@host:port,...` read straight into a ClusterConfig: good specs, and bad ones
// refused with an error that names the bad entry (no device needed).
#include <gtest/gtest.h>

#include <string>

#include "dmrt/policies/verbs/cluster.h"
#include "dmrt/runtime/error.h"

namespace dmrt {
namespace {

using verbs::parse_cluster_arg;

// The error text of parsing `spec`, or "" when it parses.
std::string error_of(const std::string& spec) {
  try {
    parse_cluster_arg(spec);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ClusterArg, ReadsRolesSizesAndAddresses) {
  ClusterConfig c = parse_cluster_arg(
      "memory:1GiB@10.0.0.1:7400,compute:64MiB@node-b.lab:7401,"
      "memory:4096K@[fe80::1]:65535");
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c.nodes[0].role, NodeRole::kMemory);
  EXPECT_EQ(c.nodes[0].region_bytes, uint64_t{1} << 30);
  EXPECT_EQ(c.nodes[0].address, "10.0.0.1:7400");
  EXPECT_EQ(c.nodes[1].role, NodeRole::kCompute);
  EXPECT_EQ(c.nodes[1].region_bytes, uint64_t{64} << 20);
  EXPECT_EQ(c.nodes[1].address, "node-b.lab:7401");
  EXPECT_EQ(c.nodes[2].region_bytes, uint64_t{4096} << 10);
  EXPECT_EQ(c.nodes[2].address, "[fe80::1]:65535");
}

TEST(ClusterArg, NewlineCannotInjectANode) {
  // Pasted into TOML text, this used to become a third [[node]].
  std::string spec =
      "memory:1GiB@127.0.0.1:7400\"\n[[node]]\nrole = \"memory\"\nregion = \"1GiB\"\n"
      "address = \"6.6.6.6:1\",compute:64MiB@127.0.0.1:7401";
  std::string e = error_of(spec);
  EXPECT_NE(e.find("control character"), std::string::npos) << e;
  EXPECT_NE(error_of("memory:1GiB@127.0.0.1:7400\n"), "");
  EXPECT_NE(error_of("memory:1GiB@127.0.0.1:7400\r,compute:1GiB@127.0.0.1:7401"), "");
}

TEST(ClusterArg, EmbeddedQuoteIsRefusedNamingTheEntry) {
  std::string e = error_of("memory:1GiB@127.0.0.1:7400,compute:64MiB@127.0\"x.0.1:7401");
  EXPECT_NE(e.find("entry 2"), std::string::npos) << e;
  EXPECT_NE(e.find("host"), std::string::npos) << e;
  e = error_of("mem\"ory:1GiB@127.0.0.1:7400");
  EXPECT_NE(e.find("role"), std::string::npos) << e;
}

TEST(ClusterArg, BadSizesAreRefused) {
  for (const char* size :
       {"0", "", "12XB", "GiB", "-1GiB", "16777216TiB", "99999999999999999999", "1.5GiB"}) {
    std::string e = error_of(std::string("memory:") + size + "@127.0.0.1:7400");
    EXPECT_NE(e.find("entry 1"), std::string::npos) << size << ": " << e;
  }
  // Parses, but a region that cannot hold the header and mailboxes is refused by validate().
  EXPECT_NE(error_of("memory:4K@127.0.0.1:7400").find("--nodes"), std::string::npos);
}

TEST(ClusterArg, PortsOutOfRangeAreRefused) {
  for (const char* port : {"0", "65536", "99999999999999999999", "-1", "", "74a0", "+80"}) {
    std::string e = error_of(std::string("memory:1GiB@127.0.0.1:") + port);
    EXPECT_NE(e.find("entry 1"), std::string::npos) << port << ": " << e;
  }
  EXPECT_NE(error_of("memory:1GiB@127.0.0.1:7400,compute:1GiB@127.0.0.1:70000").find("entry 2"),
            std::string::npos);
}

TEST(ClusterArg, MalformedEntriesAreRefused) {
  for (const char* spec :
       {"", ",", "memory:1GiB@127.0.0.1:7400,", "memory", "memory:1GiB", "memory@127.0.0.1:7400",
        "storage:1GiB@127.0.0.1:7400", "memory:1GiB@a@127.0.0.1:7400", "memory:1GiB@:7400",
        "memory:1GiB@127.0.0.1", "compute:1GiB@127.0.0.1:7400"})
    EXPECT_NE(error_of(spec), "") << spec;
}

}  // namespace
}  // namespace dmrt
