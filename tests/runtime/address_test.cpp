#include "dmrt/runtime/address.h"

#include <gtest/gtest.h>

#include <unordered_set>

namespace dmrt {

TEST(GlobalAddress, PacksNodeAndOffset) {
  GlobalAddress a(3, 0x123456789abcull);
  EXPECT_EQ(a.node(), 3);
  EXPECT_EQ(a.offset(), 0x123456789abcull);
  EXPECT_EQ(a.raw(), (uint64_t{3} << 48) | 0x123456789abcull);
  EXPECT_EQ(GlobalAddress::from_raw(a.raw()), a);
  EXPECT_EQ(a.to_string(), "3:0x123456789abc");
}

TEST(GlobalAddress, NullIsZero) {
  EXPECT_TRUE(GlobalAddress().is_null());
  EXPECT_FALSE(GlobalAddress(0, 8).is_null());
  EXPECT_FALSE(static_cast<bool>(GlobalAddress::null()));
  EXPECT_EQ(GlobalAddress::null().raw(), 0u);
}

TEST(GlobalAddress, ArithmeticStaysOnNode) {
  GlobalAddress a(65535, GlobalAddress::kOffsetMask - 8);
  EXPECT_EQ((a + 8).node(), 65535);
  EXPECT_EQ((a + 8).offset(), GlobalAddress::kOffsetMask);
  EXPECT_LT(GlobalAddress(1, 5), GlobalAddress(1, 6));
  EXPECT_LT(GlobalAddress(1, 1000), GlobalAddress(2, 0));
  std::unordered_set<GlobalAddress> s{a, a + 8, a};
  EXPECT_EQ(s.size(), 2u);
}

TEST(GlobalAddress, DeviceMemoryIsTheUpperHalfOfANodesOffsets) {
  GlobalAddress d = GlobalAddress::device(3, 0x40);
  EXPECT_TRUE(d.in_device_memory());
  EXPECT_FALSE(GlobalAddress(3, 0x40).in_device_memory());
  EXPECT_EQ(d.node(), 3);
  EXPECT_EQ(d.region_offset(), 0x40u);
  EXPECT_EQ(d.offset(), GlobalAddress::kDeviceMemoryBit | 0x40);
  EXPECT_EQ((d + 8).region_offset(), 0x48u);
  EXPECT_TRUE((d + 8).in_device_memory());
  EXPECT_NE(d, GlobalAddress(3, 0x40));
  EXPECT_FALSE(GlobalAddress::device(0, 0).is_null());  // byte 0 of device memory is real
  EXPECT_EQ(d.to_string(), "3:dm+0x40");
  EXPECT_EQ(GlobalAddress::from_raw(d.raw()), d);
}

}  // namespace dmrt
