// HugePageMemory: zero-filled, huge-page aligned once large enough, moves without a second unmap.
#include "dmrt/runtime/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace dmrt {
namespace {

bool all_zero(const std::byte* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != std::byte{0}) return false;
  return true;
}

TEST(HugePageMemory, SmallMappingsArePageAlignedAndZero) {
  HugePageMemory m(100);
  ASSERT_NE(m.data(), nullptr);
  EXPECT_EQ(m.size(), 100u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % 4096, 0u);
  EXPECT_TRUE(all_zero(m.data(), m.size()));
}

TEST(HugePageMemory, LargeMappingsStartOnAHugePage) {
  for (size_t bytes : {HugePageMemory::kHugePage, HugePageMemory::kHugePage * 3 + 4096}) {
    HugePageMemory m(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % HugePageMemory::kHugePage, 0u) << bytes;
    EXPECT_EQ(m.size(), bytes);
    EXPECT_TRUE(all_zero(m.data(), m.size())) << bytes;
    m.data()[bytes - 1] = std::byte{1};  // the whole length is mapped and writable
  }
}

TEST(HugePageMemory, MovesHandOverTheMapping) {
  HugePageMemory a(HugePageMemory::kHugePage);
  std::byte* p = a.data();
  p[0] = std::byte{7};
  HugePageMemory b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is empty
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  HugePageMemory c(64);
  c = std::move(b);  // unmaps c's own 64 bytes, takes b's
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.data()[0], std::byte{7});
  HugePageMemory none(0);
  EXPECT_EQ(none.data(), nullptr);
}

}  // namespace
}  // namespace dmrt
