// Native masked CAS on mlx5: the extended-atomic WQE rdma-core has no builder for, and the
// start-up probe that decides whether this device and driver really execute it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dmrt::verbs::mlx5 {

// One masked compare-and-swap work request in the mlx5 send-queue format: control segment,
// remote-address segment, 8-byte masked-CAS segment (swap, compare, swap mask, compare mask) and
// one data segment for the returned word. 80 bytes = 5 sixteen-byte units.
inline constexpr size_t kMaskedCasWqeBytes = 80;
inline constexpr uint8_t kOpcodeMaskedCas = 0x14;  // MLX5_OPCODE_ATOMIC_MASKED_CS
// Extended atomic (bit 3) with an argument of 2^(2+1) = 8 bytes.
inline constexpr uint8_t kOpmodExtAtomic8 = 0x08 | 0x01;
inline constexpr uint8_t kCtrlCqUpdate = 0x08;  // fm_ce_se: generate a completion

struct MaskedCasArgs {
  uint32_t qpn = 0;
  bool signaled = false;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint64_t compare = 0, compare_mask = ~0ull;
  uint64_t swap = 0, swap_mask = ~0ull;
  uint64_t local_addr = 0;  // where the NIC writes the word found before the operation
  uint32_t lkey = 0;
};

// Writes the WQE into `out` (kMaskedCasWqeBytes). The WQE index and signature are left zero:
// mlx5dv_wr_raw_wqe fills them when it copies the WQE into the send queue.
void encode_masked_cas(const MaskedCasArgs& a, void* out);

// Outcome of the start-up probe: two masked CASes on a known word over a loopback QP pair, one
// that must change a single byte and one whose compare must fail.
struct ProbeObservation {
  bool completed = false;    // both work requests completed successfully
  std::string error;         // completion status or post error otherwise
  uint64_t initial = 0;      // the word before the first CAS
  uint64_t after_first = 0;  // memory after the CAS that must succeed
  uint64_t returned_first = 0;
  uint64_t after_second = 0;  // memory after the CAS whose compare must fail
  uint64_t returned_second = 0;
};
struct ProbeVerdict {
  bool native = false;
  bool reply_big_endian = false;  // the NIC returns the old word byte-swapped (device-specific)
  std::string why;                // for the start-up report
};
// The probe's word and operands (shared by the probe and its tests).
inline constexpr uint64_t kProbeWord = 0x1122334455667788ull;
inline constexpr uint64_t kProbeMask = 0x000000000000ff00ull;  // byte 1 only
inline constexpr uint64_t kProbeSwap = 0x000000000000ab00ull;
// Native is used only when memory changed exactly as masked CAS defines (never as a plain CAS
// would) and the returned word is the old one in a recognised byte order.
ProbeVerdict judge(const ProbeObservation& o);

}  // namespace dmrt::verbs::mlx5
