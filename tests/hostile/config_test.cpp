// Hostile cluster descriptions: every one is refused with a ConfigError that says which limit,
// before anything is allocated or formatted.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "dmrt/policies/shm/pool.h"
#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/machine.h"

namespace dmrt {
namespace {

std::string config_error(const std::string& text) {
  try {
    ClusterConfig::from_toml_string(text, "hostile.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kMemoryNode = "[[node]]\nrole = \"memory\"\n";

TEST(HostileConfig, MailboxGeometryPastTheLimitsIsRefusedNotOverflowed) {
  // 2^31 x 2^31 overflowed the size check and formatting wrote past the region.
  EXPECT_NE(config_error(std::string("[mailbox]\nslots = 2147483648\nslot_bytes = 2147483648\n") +
                         kMemoryNode)
                .find("mailbox.slots must be a power of two in [2, 65536]"),
            std::string::npos);
  EXPECT_NE(config_error(std::string("[mailbox]\nslot_bytes = 2147483648\n") + kMemoryNode)
                .find("mailbox.slot_bytes must be a multiple of 64 in [128, 1048576]"),
            std::string::npos);
  EXPECT_NE(config_error(std::string("[mailbox]\nmailboxes = 2147483648\n") + kMemoryNode)
                .find("mailbox.mailboxes must be in [2, 65536]"),
            std::string::npos);
  // The largest geometry allowed (2^52 bytes of mailboxes) is computed exactly, so the region too
  // small for it is named instead of a wrapped size passing.
  EXPECT_NE(config_error(std::string("[mailbox]\nmailboxes = 65536\nslots = 65536\n"
                                     "slot_bytes = 1048576\n") +
                         kMemoryNode)
                .find("is smaller than its header and mailboxes need (4503599635767296 bytes)"),
            std::string::npos);
}

TEST(HostileConfig, RegionSizesDoNotWrap) {
  for (const char* size : {"16777216TiB", "99999999999999999999999", "18446744073709551616",
                           "268435456GiB", "281474976710656"}) {
    std::string e =
        config_error(std::string("[[node]]\nrole = \"memory\"\nregion = \"") + size + "\"\n");
    EXPECT_NE(e.find("larger than 2^48"), std::string::npos) << size << ": " << e;
  }
  // 2^47 bytes is the largest host region (the upper half of a node's offsets addresses its device
  // memory): accepted; one byte more is refused by name.
  EXPECT_EQ(config_error("[[node]]\nrole = \"memory\"\nregion = 140737488355328\n"), "");
  EXPECT_EQ(config_error("[[node]]\nrole = \"memory\"\nregion = \"127TiB\"\n"), "");
  EXPECT_NE(config_error("[[node]]\nrole = \"memory\"\nregion = 140737488355329\n")
                .find("larger than 2^47 bytes"),
            std::string::npos);
}

TEST(HostileConfig, NodeCountIsLimitedAndTheMachineIsAskedBeforeFormatting) {
  ClusterConfig c = ClusterConfig::embedded(1, 1);
  c.nodes.resize(ClusterConfig::kMaxNodes + 1, c.nodes[1]);
  try {
    c.validate();
    FAIL() << "65536 nodes accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("at most 65535"), std::string::npos) << e.what();
  }
  // 60,000 nodes of 4 MiB: each formats 2 MiB of mailboxes, 120 GiB in one process.
  ClusterConfig many = ClusterConfig::embedded(1, 1, uint64_t{4} << 20, uint64_t{4} << 20);
  many.nodes.resize(60000, many.nodes[1]);
  many.validate();
  EXPECT_GT(many.formatted_bytes(), uint64_t{100} << 30);
  try {
    shm::Pool::create(many);
    FAIL() << "a pool of 60,000 nodes was created";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("the headers and mailboxes of 60000 nodes need"),
              std::string::npos)
        << e.what();
  }
}

TEST(HostileConfig, EndlessOrHugeFilesAreCapped) {
  try {
    ClusterConfig::from_toml_file("/dev/zero");
    FAIL() << "/dev/zero parsed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than 16.0 MiB"), std::string::npos) << e.what();
  }
  try {
    ClusterConfig::from_toml_file("/nonexistent/cluster.toml");
    FAIL() << "a missing file parsed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open cluster file"), std::string::npos);
  }
}

TEST(HostileConfig, MemoryChecksNameBothNumbers) {
  try {
    require_memory(physical_memory_bytes(), "test buffers", 0.5);
    FAIL() << "all of memory accepted at a 50% share";
  } catch (const ConfigError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("test buffers need "), std::string::npos) << w;
    EXPECT_NE(w.find("50% of this machine's"), std::string::npos) << w;
  }
  EXPECT_NO_THROW(require_memory(1 << 20, "one MiB", 0.5));
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(100), "100 B");
}

}  // namespace
}  // namespace dmrt
