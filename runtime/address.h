// GlobalAddress: a position-independent pointer into some node's region.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace dmrt {

using NodeId = uint16_t;

// {node:16, offset:48} packed in one word so it can live in 8-byte remote slots and be CASed.
// Offset 0 of every region is the region header, so raw value 0 is never a real object: null.
class GlobalAddress {
 public:
  static constexpr unsigned kOffsetBits = 48;
  static constexpr uint64_t kOffsetMask = (uint64_t{1} << kOffsetBits) - 1;

  constexpr GlobalAddress() = default;
  constexpr GlobalAddress(NodeId node, uint64_t offset)
      : raw_((uint64_t{node} << kOffsetBits) | (offset & kOffsetMask)) {}
  static constexpr GlobalAddress from_raw(uint64_t raw) {
    GlobalAddress a;
    a.raw_ = raw;
    return a;
  }
  static constexpr GlobalAddress null() { return {}; }

  constexpr uint64_t raw() const { return raw_; }
  constexpr NodeId node() const { return static_cast<NodeId>(raw_ >> kOffsetBits); }
  constexpr uint64_t offset() const { return raw_ & kOffsetMask; }
  constexpr bool is_null() const { return raw_ == 0; }
  constexpr explicit operator bool() const { return raw_ != 0; }

  constexpr GlobalAddress operator+(uint64_t delta) const { return {node(), offset() + delta}; }
  constexpr GlobalAddress& operator+=(uint64_t delta) { return *this = *this + delta; }

  constexpr auto operator<=>(const GlobalAddress&) const = default;

  std::string to_string() const { return std::to_string(node()) + ":0x" + to_hex(offset()); }

 private:
  static std::string to_hex(uint64_t v) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s;
    do {
      s.insert(s.begin(), kDigits[v & 15]);
      v >>= 4;
    } while (v);
    return s;
  }
  uint64_t raw_ = 0;
};

static_assert(sizeof(GlobalAddress) == 8);

}  // namespace dmrt

template <>
struct std::hash<dmrt::GlobalAddress> {
  size_t operator()(dmrt::GlobalAddress a) const noexcept { return std::hash<uint64_t>{}(a.raw()); }
};
