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
//
// Device memory. A node may also expose a small device-memory region: memory on its NIC (on-chip
// memory, RDMA "device memory"), which a verb reaches without crossing PCIe to host memory. Its
// bytes are addressed in the upper half of the node's offset space: offset kDeviceMemoryBit + d is
// byte d of node n's device memory (GlobalAddress::device(n, d)); host regions stay below
// kDeviceMemoryBit (ClusterConfig::validate). It is one more place a verb can target, not another
// kind of address: the same Batch (so one batch may CAS a lock word in device memory and READ a
// node in host memory, in order), the same verbs and counters. Every transport serves it
// (shm: plain memory of its own; sim: cheaper verbs at the memory node; verbs: ibv_alloc_dm, or
// host memory when the device has none, reported). It is never a local access
// (dmrt/runtime/verbs.h): the CPU cannot load from NIC memory. Client::alloc_device_memory hands it
// out.
class GlobalAddress {
 public:
  static constexpr unsigned kOffsetBits = 48;
  static constexpr uint64_t kOffsetMask = (uint64_t{1} << kOffsetBits) - 1;
  static constexpr uint64_t kDeviceMemoryBit = uint64_t{1} << (kOffsetBits - 1);

  constexpr GlobalAddress() = default;
  constexpr GlobalAddress(NodeId node, uint64_t offset)
      : raw_((uint64_t{node} << kOffsetBits) | (offset & kOffsetMask)) {}
  static constexpr GlobalAddress from_raw(uint64_t raw) {
    GlobalAddress a;
    a.raw_ = raw;
    return a;
  }
  static constexpr GlobalAddress null() { return {}; }
  // Byte `offset` of node `node`'s device memory.
  static constexpr GlobalAddress device(NodeId node, uint64_t offset) {
    return {node, kDeviceMemoryBit | offset};
  }

  constexpr uint64_t raw() const { return raw_; }
  constexpr NodeId node() const { return static_cast<NodeId>(raw_ >> kOffsetBits); }
  constexpr uint64_t offset() const { return raw_ & kOffsetMask; }
  constexpr bool is_null() const { return raw_ == 0; }
  constexpr bool in_device_memory() const { return (raw_ & kDeviceMemoryBit) != 0; }
  // The offset inside the region the address lies in (host region or device memory).
  constexpr uint64_t region_offset() const { return offset() & ~kDeviceMemoryBit; }
  constexpr explicit operator bool() const { return raw_ != 0; }

  constexpr GlobalAddress operator+(uint64_t delta) const { return {node(), offset() + delta}; }
  constexpr GlobalAddress& operator+=(uint64_t delta) { return *this = *this + delta; }

  constexpr auto operator<=>(const GlobalAddress&) const = default;

  std::string to_string() const {
    return std::to_string(node()) + (in_device_memory() ? ":dm+0x" : ":0x") +
           to_hex(region_offset());
  }

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
