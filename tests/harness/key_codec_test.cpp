// dmrt-bench's byte-key codec (bench/workload/key_codec.h): exact sizes, order preserved, decode
// inverts encode and rejects any other byte string.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "bench/workload/key_codec.h"
#include "bench/workload/workload.h"

namespace dmrt::bench {
namespace {

std::vector<Key> codec_sample_keys() {
  std::vector<Key> keys = {0,
                           1,
                           9,
                           10,
                           11,
                           99,
                           100,
                           255,
                           256,
                           65535,
                           65536,
                           ~Key{0},
                           ~Key{0} - 1,
                           Key{1} << 63,
                           (Key{1} << 63) - 1,
                           9999999999999999999ull,
                           10000000000000000000ull};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 2000; ++i) keys.push_back(rng() >> (rng() % 64));
  for (uint64_t r = 0; r < 200; ++r) keys.push_back(record_key(r, KeyOrder::kHashed));
  return keys;
}

TEST(KeyCodec, EncodesExactlyKeySizeBytesAndPreservesOrder) {
  const auto keys = codec_sample_keys();
  for (auto [size, format] :
       {std::pair{size_t{24}, KeyFormat::kUser}, std::pair{size_t{32}, KeyFormat::kUser},
        std::pair{size_t{256}, KeyFormat::kUser}, std::pair{size_t{1024}, KeyFormat::kUser},
        std::pair{size_t{9}, KeyFormat::kRandom}, std::pair{size_t{32}, KeyFormat::kRandom},
        std::pair{size_t{257}, KeyFormat::kRandom}}) {
    SCOPED_TRACE(std::string(to_string(format)) + " " + std::to_string(size));
    KeyCodec codec(size, format);
    for (size_t i = 0; i < keys.size(); ++i) {
      const std::string a = codec.encode(keys[i]);
      ASSERT_EQ(a.size(), size);
      ASSERT_EQ(codec.decode(a), keys[i]);
      const Key other = keys[(i * 7 + 3) % keys.size()];
      const std::string b = codec.encode(other);
      ASSERT_EQ(keys[i] < other, a < b) << keys[i] << " vs " << other;
      ASSERT_EQ(keys[i] == other, a == b);
    }
  }
}

TEST(KeyCodec, UserFormIsYcsbLike) {
  KeyCodec codec(32, KeyFormat::kUser);
  const std::string k = codec.encode(12345);
  EXPECT_EQ(k.substr(0, 24), "user00000000000000012345");
  for (char c : k.substr(24)) EXPECT_TRUE(c >= 'a' && c <= 'z') << int(c);
  EXPECT_EQ(KeyCodec(24, KeyFormat::kUser).encode(~Key{0}), "user18446744073709551615");
  EXPECT_EQ(min_key_size(KeyFormat::kUser), 24u);
  EXPECT_EQ(min_key_size(KeyFormat::kRandom), 8u);
}

TEST(KeyCodec, RandomFormIsBigEndianThenAnyByte) {
  KeyCodec codec(64, KeyFormat::kRandom);
  EXPECT_EQ(codec.encode(0x0102030405060708ull).substr(0, 8), "\x01\x02\x03\x04\x05\x06\x07\x08");
  bool zero = false, ff = false;
  for (Key k = 1; k < 200; ++k)
    for (char c : codec.encode(k).substr(8)) {
      zero |= c == '\x00';
      ff |= c == '\xff';
    }
  EXPECT_TRUE(zero);
  EXPECT_TRUE(ff);
  // The tail depends on the key: two keys differ beyond their first 8 bytes too.
  EXPECT_NE(codec.encode(1).substr(8), codec.encode(2).substr(8));
}

TEST(KeyCodec, DecodeRejectsWhatNoKeyEncodesTo) {
  for (auto format : {KeyFormat::kUser, KeyFormat::kRandom}) {
    KeyCodec codec(100, format);
    const std::string k = codec.encode(424242);
    EXPECT_FALSE(codec.decode(k.substr(0, 99)));  // truncated
    EXPECT_FALSE(codec.decode(k + "x"));          // too long
    for (size_t at : {size_t{0}, size_t{5}, size_t{30}, size_t{64}, size_t{99}}) {
      std::string bad = k;
      bad[at] = static_cast<char>(bad[at] ^ 0x40);
      EXPECT_FALSE(codec.decode(bad)) << to_string(format) << " byte " << at;
    }
  }
  KeyCodec user(24, KeyFormat::kUser);
  EXPECT_FALSE(user.decode("user99999999999999999999"));  // above 2^64 - 1
  EXPECT_FALSE(user.decode("usex00000000000000000001"));
  EXPECT_EQ(parse_key_format("user"), KeyFormat::kUser);
  EXPECT_EQ(parse_key_format("random"), KeyFormat::kRandom);
  EXPECT_FALSE(parse_key_format("hex"));
}

TEST(KeyCodec, EncodingIntoABufferReusesIt) {
  KeyCodec codec(256, KeyFormat::kRandom);
  std::string buf;
  codec.encode(1, buf);
  const char* data = buf.data();
  for (Key k = 2; k < 100; ++k) {
    codec.encode(k, buf);
    ASSERT_EQ(buf.data(), data);  // no reallocation per key
    ASSERT_EQ(buf, codec.encode(k));
  }
}

}  // namespace
}  // namespace dmrt::bench
