#include "dmrt/runtime/cluster.h"

#include <gtest/gtest.h>

#include "dmrt/runtime/error.h"

namespace dmrt {

TEST(Cluster, EmbeddedDefaultHasMemoryThenComputeNodes) {
  auto c = ClusterConfig::embedded(2, 3);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c.memory_nodes(), (std::vector<NodeId>{0, 1}));
  EXPECT_EQ(c.compute_nodes(), (std::vector<NodeId>{2, 3, 4}));
}

TEST(Cluster, ParsesToml) {
  auto c = ClusterConfig::from_toml_string(R"(
[mailbox]
slots = 64

[[node]]
role = "memory"
region = "256MiB"
address = "10.0.0.1:7000"

[[node]]
role = "compute"
region = 33554432
)");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.nodes[0].region_bytes, uint64_t{256} << 20);
  EXPECT_EQ(c.nodes[0].address, "10.0.0.1:7000");
  EXPECT_EQ(c.nodes[1].role, NodeRole::kCompute);
  EXPECT_EQ(c.nodes[1].region_bytes, uint64_t{32} << 20);
  EXPECT_EQ(c.mailbox.slots, 64u);
}

void expect_config_error(const std::string& text, const std::string& fragment) {
  try {
    ClusterConfig::from_toml_string(text, "cluster.toml");
    FAIL() << "accepted: " << text;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Cluster, MalformedFilesGiveClearErrors) {
  expect_config_error("[[node]\nrole=", "cluster.toml:");
  expect_config_error("[[node]]\nrole = \"gpu\"\n", "expected \"memory\" or \"compute\"");
  expect_config_error("[[node]]\nrole = \"memory\"\nregion = \"12XB\"\n", "cannot read size");
  expect_config_error("[[node]]\nrole = \"memory\"\ncolour = 1\n", "unknown field");
  expect_config_error("[[node]]\nrole = \"compute\"\n", "no memory node");
  expect_config_error("[[node]]\nrole = \"memory\"\nregion = 4096\n", "smaller than");
  expect_config_error("[nodes]\n", "unknown section");
  expect_config_error("[mailbox]\nslots = 3\n[[node]]\nrole=\"memory\"\n", "power of two");
  EXPECT_THROW(ClusterConfig::from_toml_file("/nonexistent/cluster.toml"), ConfigError);
}

TEST(Cluster, FarMemoryCostPerMemoryNode) {
  auto c = ClusterConfig::from_toml_string(R"(
[[node]]
role = "memory"
shm_latency_ns = 300
shm_gbps = 256

[[node]]
role = "memory"
shm_gbps = 12.5

[[node]]
role = "compute"
)");
  EXPECT_EQ(c.nodes[0].far, (FarMemoryCost{300, 256.0}));
  EXPECT_EQ(c.nodes[1].far, (FarMemoryCost{0, 12.5}));
  EXPECT_TRUE(c.nodes[1].far.enabled());
  EXPECT_FALSE(c.nodes[2].far.enabled());
  EXPECT_EQ(FarMemoryCost::preset("cxl"), (FarMemoryCost{300, 256.0}));
  EXPECT_FALSE(FarMemoryCost::preset("none").enabled());
  EXPECT_THROW(FarMemoryCost::preset("optane"), ConfigError);
}

TEST(Cluster, FarMemoryCostErrorsNameTheField) {
  expect_config_error("[[node]]\nrole = \"memory\"\nshm_latency_ns = -1\n",
                      "cluster.toml:1: node.shm_latency_ns");
  expect_config_error("[[node]]\nrole = \"memory\"\nshm_latency_ns = \"fast\"\n",
                      "expected a latency");
  expect_config_error("[[node]]\nrole = \"memory\"\nshm_latency_ns = 2000000000\n",
                      "more than one second");
  expect_config_error("[[node]]\nrole = \"memory\"\nshm_gbps = -3\n", "bandwidth must be");
  expect_config_error("[[node]]\nrole = \"memory\"\nshm_gbps = \"lots\"\n", "expected a bandwidth");
  expect_config_error(
      "[[node]]\nrole = \"memory\"\n[[node]]\nrole = \"compute\"\nshm_latency_ns = 300\n",
      "node 1: shm_latency_ns and shm_gbps model a memory node");
  // Set in code, validate() checks the same.
  auto c = ClusterConfig::embedded(1, 1);
  c.nodes[0].far.gbps = -1;
  EXPECT_THROW(c.validate(), ConfigError);
}

TEST(Cluster, DeviceMemoryDefaultsToMemoryNodesAndIsChecked) {
  auto e = ClusterConfig::embedded(1, 1);
  EXPECT_EQ(e.nodes[0].device_memory_bytes, NodeSpec::kDefaultDeviceMemoryBytes);
  EXPECT_EQ(e.nodes[1].device_memory_bytes, 0u);
  auto c = ClusterConfig::from_toml_string(R"(
[[node]]
role = "memory"
[[node]]
role = "memory"
device_memory = "1MiB"
[[node]]
role = "memory"
device_memory = 0
[[node]]
role = "compute"
)");
  EXPECT_EQ(c.nodes[0].device_memory_bytes, uint64_t{256} << 10);
  EXPECT_EQ(c.nodes[1].device_memory_bytes, uint64_t{1} << 20);
  EXPECT_EQ(c.nodes[2].device_memory_bytes, 0u);
  EXPECT_EQ(c.nodes[3].device_memory_bytes, 0u);
  for (const char* bad : {"100", "\"2GiB\""}) {
    try {
      ClusterConfig::from_toml_string(std::string("[[node]]\nrole = \"memory\"\ndevice_memory = ") +
                                      bad + "\n");
      FAIL() << bad;
    } catch (const ConfigError& err) {
      EXPECT_NE(std::string(err.what()).find("multiple of 64 bytes, at most 1 GiB"),
                std::string::npos)
          << err.what();
    }
  }
  // Host regions end below the device-memory half of the offset space.
  auto big = ClusterConfig::embedded(1, 1);
  big.nodes[0].region_bytes = GlobalAddress::kDeviceMemoryBit + 4096;
  EXPECT_THROW(big.validate(), ConfigError);
}

}  // namespace dmrt
