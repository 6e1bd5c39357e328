// mlx5 masked-CAS WQE encoding and the probe verdict (no device access here: unit-testable).
#include "dmrt/policies/verbs/mlx5_masked.h"

#include <cstring>
#include <sstream>

#include "dmrt/runtime/verbs.h"

namespace dmrt::verbs::mlx5 {

namespace {

void put_be32(uint8_t* p, uint32_t v) {
  for (int i = 3; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}
void put_be64(uint8_t* p, uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}
std::string hex(uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

}  // namespace

void encode_masked_cas(const MaskedCasArgs& a, void* out) {
  auto* w = static_cast<uint8_t*>(out);
  std::memset(w, 0, kMaskedCasWqeBytes);
  // Control: opmod | wqe index (driver) | opcode; QP number | size in 16-byte units; flags.
  put_be32(w + 0, uint32_t{kOpmodExtAtomic8} << 24 | kOpcodeMaskedCas);
  put_be32(w + 4, a.qpn << 8 | static_cast<uint32_t>(kMaskedCasWqeBytes / 16));
  w[11] = a.signaled ? kCtrlCqUpdate : 0;
  // Remote address.
  put_be64(w + 16, a.remote_addr);
  put_be32(w + 24, a.rkey);
  // Masked CAS, 8-byte operands: data pair, then mask pair.
  put_be64(w + 32, a.swap);
  put_be64(w + 40, a.compare);
  put_be64(w + 48, a.swap_mask);
  put_be64(w + 56, a.compare_mask);
  // Local buffer for the returned word.
  put_be32(w + 64, 8);
  put_be32(w + 68, a.lkey);
  put_be64(w + 72, a.local_addr);
}

ProbeVerdict judge(const ProbeObservation& o) {
  ProbeVerdict v;
  if (!o.completed) {
    v.why = "probe failed: " + o.error;
    return v;
  }
  uint64_t want = masked_cas_result(o.initial, kProbeSwap, kProbeMask);
  if (o.after_first != want) {
    v.why = "probe wrote " + hex(o.after_first) + " over " + hex(o.initial) +
            ", masked CAS gives " + hex(want) +
            (o.after_first == o.initial ? " (the compare was not masked)" : "");
    return v;
  }
  if (o.after_second != o.after_first) {
    v.why = "probe: a masked compare that must fail changed " + hex(o.after_first) + " to " +
            hex(o.after_second);
    return v;
  }
  bool host = o.returned_first == o.initial && o.returned_second == o.after_first;
  bool be = o.returned_first == __builtin_bswap64(o.initial) &&
            o.returned_second == __builtin_bswap64(o.after_first);
  if (!host && !be) {
    v.why = "probe returned " + hex(o.returned_first) + " for old word " + hex(o.initial);
    return v;
  }
  v.native = true;
  v.reply_big_endian = be;
  v.why = std::string("probe passed; old word returned in ") + (be ? "big-endian" : "host") +
          " byte order";
  return v;
}

}  // namespace dmrt::verbs::mlx5
