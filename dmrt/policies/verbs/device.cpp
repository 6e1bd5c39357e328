#include "dmrt/policies/verbs/device.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <vector>

#include "dmrt/runtime/error.h"

#ifdef DMRT_HAVE_MLX5DV
#include <infiniband/mlx5dv.h>
#endif

namespace dmrt::verbs {

namespace {

bool ipv4_mapped(const ibv_gid& g) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(g.raw, prefix, 12) == 0;
}

bool zero_gid(const ibv_gid& g) {
  for (uint8_t b : g.raw)
    if (b) return false;
  return true;
}

const char* port_state_name(ibv_port_state s) {
  return ibv_port_state_str(s);
}

ibv_mtu mtu_enum(int bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 1024:
      return IBV_MTU_1024;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
  }
  throw ConfigError("MTU " + std::to_string(bytes) + " is not one of 256, 512, 1024, 2048, 4096");
}

}  // namespace

int mtu_bytes(ibv_mtu m) {
  return 128 << static_cast<int>(m);
}

std::string gid_text(const ibv_gid& g) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, g.raw, buf, sizeof buf);
  return buf;
}

bool device_available(std::string* why) {
  int n = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&n);
  const int err = errno;
  if (list) ibv_free_device_list(list);
  if (n > 0) return true;
  if (why) {
    // ENOSYS: the kernel has no RDMA subsystem at all (no /sys/class/infiniband).
    const std::string found = list            ? "ibv_get_device_list found none"
                              : err == ENOSYS ? "this kernel has no RDMA support"
                                              : "ibv_get_device_list failed: " + err_text(err);
    *why = "no RDMA device: " + found +
           " (install ibverbs-providers and load the NIC's driver, or rdma_rxe/siw; or run "
           "tests/vm/run.sh to test on Soft-RoCE inside a VM)";
  }
  return false;
}

Device::Device(const Options& opts) {
  // One wording for "no device", with what to do about it (device_available()).
  if (std::string why; !device_available(&why)) throw TransportError(why);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) {
    if (list) ibv_free_device_list(list);
    throw TransportError("no RDMA device: the device list changed while dmrt opened it");
  }
  std::string names;
  std::string why_not;
  for (int i = 0; i < n && !ctx_; ++i) {
    std::string nm = ibv_get_device_name(list[i]);
    names += (names.empty() ? "" : ", ") + nm;
    if (!opts.device.empty() && nm != opts.device) continue;
    ibv_context* c = ibv_open_device(list[i]);
    if (!c) {
      why_not += nm + ": cannot open (" + err_text(errno) + "); ";
      continue;
    }
    ibv_device_attr da{};
    if (ibv_query_device(c, &da) != 0) {
      why_not += nm + ": query failed; ";
      ibv_close_device(c);
      continue;
    }
    int chosen = 0;
    for (int p = 1; p <= da.phys_port_cnt; ++p) {
      if (opts.port && p != opts.port) continue;
      ibv_port_attr pa{};
      if (ibv_query_port(c, static_cast<uint8_t>(p), &pa) != 0) continue;
      if (pa.state != IBV_PORT_ACTIVE) {
        why_not += nm + " port " + std::to_string(p) + " is " + port_state_name(pa.state) + "; ";
        continue;
      }
      chosen = p;
      break;
    }
    if (opts.port && opts.port > da.phys_port_cnt)
      why_not += nm + " has no port " + std::to_string(opts.port) + " (it has " +
                 std::to_string(da.phys_port_cnt) + "); ";
    if (!chosen) {
      ibv_close_device(c);
      continue;
    }
    ctx_ = c;
    name_ = nm;
    port_ = static_cast<uint8_t>(chosen);
    mlx5_ =
#ifdef DMRT_HAVE_MLX5DV
        mlx5dv_is_supported(list[i]);
#else
        false;
#endif
  }
  ibv_free_device_list(list);
  if (!ctx_) {
    if (!opts.device.empty() && names.find(opts.device) == std::string::npos)
      throw TransportError("RDMA device '" + opts.device + "' not found (devices: " + names + ")");
    throw TransportError(
        "no usable RDMA port: " + (why_not.empty() ? std::string("devices: ") + names : why_not) +
        " (bring the link up, or pick --device/--port)");
  }

  ibv_device_attr_ex ax{};
  if (ibv_query_device_ex(ctx_, nullptr, &ax) != 0) {
    ax = {};
    ibv_query_device(ctx_, &ax.orig_attr);
  }
  const ibv_device_attr& da = ax.orig_attr;
  atomics_ = da.atomic_cap != IBV_ATOMIC_NONE;
  max_rd_atomic_ = std::max(1, std::min(16, da.max_qp_init_rd_atom));
  max_dest_rd_atomic_ = std::max(1, std::min(16, da.max_qp_rd_atom));
  max_qp_wr_ = da.max_qp_wr;
  max_cqe_ = da.max_cqe;
  dm_bytes_ = ax.max_dm_size;

  ibv_port_attr pa{};
  if (ibv_query_port(ctx_, port_, &pa) != 0)
    throw TransportError("cannot query port " + std::to_string(port_) + " of " + name_);
  ethernet_ = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  lid_ = pa.lid;
  max_msg_ = pa.max_msg_sz;
  mtu_ = opts.mtu ? mtu_enum(opts.mtu) : pa.active_mtu;
  if (opts.mtu && mtu_ > pa.active_mtu)
    throw ConfigError("MTU " + std::to_string(opts.mtu) + " exceeds the active MTU " +
                      std::to_string(mtu_bytes(pa.active_mtu)) + " of " + name_ + " port " +
                      std::to_string(port_));

  // GID: by flag, or the best entry of the table.
  std::string gid_kind = "IB";
  if (opts.gid_index >= 0) {
    if (opts.gid_index >= pa.gid_tbl_len)
      throw ConfigError("GID index " + std::to_string(opts.gid_index) + " out of range: " + name_ +
                        " port " + std::to_string(port_) + " has " +
                        std::to_string(pa.gid_tbl_len) + " GIDs");
    gid_index_ = opts.gid_index;
    ibv_gid_entry e{};
    if (ibv_query_gid_ex(ctx_, port_, gid_index_, &e, 0) != 0)
      throw ConfigError("GID index " + std::to_string(gid_index_) + " of " + name_ +
                        " is empty or unreadable: " + err_text(errno));
    gid_ = e.gid;
    gid_kind = e.gid_type == IBV_GID_TYPE_ROCE_V2   ? "RoCE v2"
               : e.gid_type == IBV_GID_TYPE_ROCE_V1 ? "RoCE v1"
                                                    : "IB";
  } else if (ethernet_) {
    int best = -1, best_score = -1;
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
      ibv_gid_entry e{};
      if (ibv_query_gid_ex(ctx_, port_, i, &e, 0) != 0) continue;
      if (zero_gid(e.gid)) continue;
      int score = (e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 2 : 0) + (ipv4_mapped(e.gid) ? 1 : 0);
      if (score > best_score) {
        best = i;
        best_score = score;
        gid_ = e.gid;
        gid_kind = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" : "RoCE v1";
      }
    }
    if (best < 0)
      throw TransportError(name_ + " port " + std::to_string(port_) +
                           " is RoCE but has no GID: give the netdev an IP address");
    gid_index_ = best;
  } else {
    gid_index_ = 0;
    if (ibv_query_gid(ctx_, port_, 0, &gid_) != 0) gid_ = {};
  }

  pd_ = ibv_alloc_pd(ctx_);
  if (!pd_) throw TransportError("ibv_alloc_pd on " + name_ + " failed: " + err_text(errno));

  std::ostringstream os;
  os << "verbs: device " << name_ << " port " << int(port_) << " ("
     << (ethernet_ ? "Ethernet/RoCE" : "InfiniBand") << ", " << port_state_name(pa.state)
     << ", MTU " << mtu_bytes(mtu_) << " of active " << mtu_bytes(pa.active_mtu) << ")"
     << " GID[" << gid_index_ << "] " << gid_text(gid_) << " " << gid_kind;
  if (!ethernet_) os << " LID " << lid_;
  os << "; atomics "
     << (da.atomic_cap == IBV_ATOMIC_HCA    ? "HCA"
         : da.atomic_cap == IBV_ATOMIC_GLOB ? "GLOB"
                                            : "NONE")
     << "; device memory "
     << (dm_bytes_ ? std::to_string(dm_bytes_) + " bytes" : std::string("none")) << "; max_qp_wr "
     << max_qp_wr_ << ", max_rd_atomic " << max_rd_atomic_;
  report_ = os.str();
}

Device::~Device() {
  if (pd_) ibv_dealloc_pd(pd_);
  if (ctx_) ibv_close_device(ctx_);
}

}  // namespace dmrt::verbs
