// Device selection for the verbs transport: device, port, GID and MTU chosen by flag or found
// automatically (never hard-coded), and the optional capabilities this build can use.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace dmrt::verbs {

enum class MaskedCasMode : uint8_t {
  kAuto,     // native when the device and this build support it, else the counted CAS loop
  kEmulate,  // always the CAS loop
  kNative,   // native or fail at start-up
};

struct Options {
  std::string device;  // ibv device name ("mlx5_1", "rxe0"); empty = first with an ACTIVE port
  int port = 0;        // 0 = first ACTIVE port of the device
  int gid_index = -1;  // -1 = RoCE v2 IPv4-mapped GID if there is one, else RoCE v2, else 0
  int mtu = 0;         // 0 = the port's active MTU; else 256/512/1024/2048/4096
  uint8_t ack_timeout = 14;  // local ACK timeout exponent: 4.096 us * 2^t
  uint8_t retry_count = 7;   // transport retries before a RETRY_EXC error completion
  uint8_t rnr_retry = 7;
  uint8_t hop_limit = 64;   // RoCE/IB GRH hop limit
  unsigned threads = 1;     // OS threads that run clients (one CQ and QP set per thread)
  uint32_t qp_depth = 512;  // send queue entries per QP
  uint64_t staging_bytes = uint64_t{4} << 20;  // registered staging slab per thread
  uint32_t staging_slot = 64 << 10;            // one execute() at a time uses one slot
  uint32_t connect_timeout_ms = 30000;         // peers that never arrive / barrier
  MaskedCasMode masked_cas = MaskedCasMode::kAuto;
  bool hugepages = false;  // back the local region with MAP_HUGETLB (falls back with a note)
  // Without a cluster secret the bootstrap listens on loopback only; this keeps the configured
  // address anyway (anyone who can reach it can then read and write the region).
  bool allow_unauthenticated = false;
  uint32_t bootstrap_frame_timeout_ms = 3000;  // a request must arrive within this
};

// True when libibverbs lists at least one device; otherwise `why` says so.
bool device_available(std::string* why = nullptr);

// One opened device, protection domain and port.
class Device {
 public:
  explicit Device(const Options& opts);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ibv_context* context() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& name() const { return name_; }
  uint8_t port() const { return port_; }
  int gid_index() const { return gid_index_; }
  const ibv_gid& gid() const { return gid_; }
  uint16_t lid() const { return lid_; }
  ibv_mtu mtu() const { return mtu_; }
  bool ethernet() const { return ethernet_; }
  uint32_t max_msg_bytes() const { return max_msg_; }
  int max_rd_atomic() const { return max_rd_atomic_; }
  int max_dest_rd_atomic() const { return max_dest_rd_atomic_; }
  int max_qp_wr() const { return max_qp_wr_; }
  int max_cqe() const { return max_cqe_; }
  bool atomics() const { return atomics_; }
  bool mlx5() const { return mlx5_; }
  uint64_t device_memory_bytes() const { return dm_bytes_; }
  // One paragraph for the start-up log: device, port, GID, MTU and the optional capabilities
  // (how masked CAS is served is decided by the Cluster's probe and reported there).
  const std::string& report() const { return report_; }

 private:
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  std::string name_;
  uint8_t port_ = 0;
  int gid_index_ = 0;
  ibv_gid gid_{};
  uint16_t lid_ = 0;
  ibv_mtu mtu_ = IBV_MTU_1024;
  bool ethernet_ = false;
  uint32_t max_msg_ = 0;
  int max_rd_atomic_ = 1;
  int max_dest_rd_atomic_ = 1;
  int max_qp_wr_ = 0;
  int max_cqe_ = 0;
  bool atomics_ = false;
  bool mlx5_ = false;
  uint64_t dm_bytes_ = 0;
  std::string report_;
};

std::string gid_text(const ibv_gid& g);
int mtu_bytes(ibv_mtu m);

}  // namespace dmrt::verbs
