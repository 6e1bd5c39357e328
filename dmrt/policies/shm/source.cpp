// shm pools on a device or file the user names (dmrt/policies/shm/source.h): probing the path, the
// layout of the regions in it, creation and attachment.
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "dmrt/policies/shm/numa_bind.h"
#include "dmrt/policies/shm/pool.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/placement.h"

namespace dmrt::shm {

// Named (not anonymous): libdmrt compiles this file in one unity unit with pool.cpp.
namespace source_detail {

std::string sys_error() {
  return std::strerror(errno);
}

struct SourceFd {
  int fd = -1;
  ~SourceFd() {
    if (fd >= 0) close(fd);
  }
};

uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

// A sysfs attribute's first line, or "" when it cannot be read.
std::string sysfs_text(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return "";
  char buf[256] = {};
  const bool got = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  if (!got) return "";
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A sysfs number (decimal, or hex with 0x), or `otherwise`.
long long sysfs_number(const std::string& path, long long otherwise) {
  const std::string s = sysfs_text(path);
  if (s.empty()) return otherwise;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 0);
  return errno == 0 && end && *end == '\0' ? v : otherwise;
}

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string filesystem_name(int fd) {
  struct statfs f;
  if (fstatfs(fd, &f) != 0) return "";
  switch (static_cast<unsigned long>(f.f_type)) {
    case TMPFS_MAGIC:
      return "tmpfs";
    case EXT4_SUPER_MAGIC:
      return "ext4";
    case XFS_SUPER_MAGIC:
      return "xfs";
    case BTRFS_SUPER_MAGIC:
      return "btrfs";
    case NFS_SUPER_MAGIC:
      return "nfs";
    case V9FS_MAGIC:
      return "9p";
    case HUGETLBFS_MAGIC:
      return "hugetlbfs";
    case OVERLAYFS_SUPER_MAGIC:
      return "overlayfs";
    default: {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(f.f_type));
      return hex;
    }
  }
}

// What a path is, opened read-write: its kind, its real size (never a header's word), the
// alignment a mapping of it needs, and the record of it (PoolProvenance).
struct Probe {
  SourceFd fd;
  PoolProvenance info;
  uint64_t align = 4096;
  bool file = false;  // a plain file: it may be created, grown and hole-punched
};

// The CXL region (/sys/bus/cxl/devices/regionN) that starts at host physical address `resource`
// (as sysfs writes it), described as `cxl list -R` reports it, or "" when none does.
std::string cxl_region_at(const std::string& resource) {
  const long long at = resource.empty() ? -1 : std::strtoll(resource.c_str(), nullptr, 0);
  if (at <= 0) return "";
  const std::string bus = "/sys/bus/cxl/devices/";
  for (int i = 0; i < 64; ++i) {
    const std::string r = bus + "region" + std::to_string(i);
    if (sysfs_number(r + "/resource", -1) != at) continue;
    std::string targets;
    for (long long t = 0, ways = sysfs_number(r + "/interleave_ways", 0); t < ways; ++t)
      targets += (t ? ", " : "") + sysfs_text(r + "/target" + std::to_string(t));
    return "CXL region" + std::to_string(i) + " (" + std::to_string(sysfs_number(r + "/size", 0)) +
           " bytes, " + std::to_string(sysfs_number(r + "/interleave_ways", 0)) +
           "-way interleave at " + std::to_string(sysfs_number(r + "/interleave_granularity", 0)) +
           " B, " + (sysfs_text(r + "/commit") == "1" ? "committed" : "not committed") +
           ", targets " + targets + "; through cxl_pmem's NVDIMM bridge)";
  }
  return "";
}

// A device-dax character device: its size, alignment and node are its sysfs attributes.
void probe_devdax(Probe& p, const struct stat& st, const std::string& path) {
  const std::string sys = "/sys/dev/char/" + std::to_string(major(st.st_rdev)) + ":" +
                          std::to_string(minor(st.st_rdev));
  if (base_name(real_path(sys + "/subsystem")) != "dax")
    throw ConfigError("pool '" + path +
                      "': a character device, but not a device-dax (/dev/daxX.Y); a pool "
                      "lives on a device-dax, a PCI BAR (/sys/bus/pci/devices/D/resource2) or a "
                      "file");
  const long long size = sysfs_number(sys + "/size", -1);
  if (size <= 0)
    throw ConfigError("pool '" + path + "': cannot read the device-dax's size (" + sys +
                      "/size); is it enabled (daxctl list)?");
  p.info.kind = "devdax";
  p.info.source_bytes = static_cast<uint64_t>(size);
  p.info.device = real_path(sys);
  p.align = static_cast<uint64_t>(sysfs_number(sys + "/align", Pool::kSourceAlign));
  if (p.align == 0 || (p.align & (p.align - 1))) p.align = Pool::kSourceAlign;
  p.info.device_numa_node = static_cast<int>(sysfs_number(sys + "/target_node", -1));
  const std::string& d = p.info.device;
  std::string behind;
  if (d.find("/nvdimm-bridge") != std::string::npos) {
    // A persistent CXL region reaches device-dax through cxl_pmem's NVDIMM bridge: a libnvdimm
    // region at the same host physical range as the CXL region, which says what it is.
    const std::string nd_region = d.substr(0, d.rfind("/dax"));
    behind = cxl_region_at(sysfs_text(nd_region.substr(0, nd_region.rfind('/')) + "/resource"));
    if (behind.empty()) behind = "a CXL region (through cxl_pmem's NVDIMM bridge)";
  } else {
    behind = d.find("/decoder") != std::string::npos ? "a CXL region"
             : d.find("/ndbus") != std::string::npos ? "an NVDIMM namespace (libnvdimm)"
                                                     : "a dax region";
  }
  p.info.kernel_path = "device-dax over " + behind + ": " + d;
}

// A PCI BAR through sysfs (resourceN): its size is the file's; the device must be enabled.
void probe_pci_bar(Probe& p, const struct stat& st, const std::string& path,
                   const std::string& real) {
  const std::string dev = real.substr(0, real.rfind('/'));
  p.info.kind = "pci-bar";
  p.info.device = dev;
  p.info.source_bytes = static_cast<uint64_t>(st.st_size);
  p.info.device_numa_node = static_cast<int>(sysfs_number(dev + "/numa_node", -1));
  if (sysfs_text(dev + "/enable") == "0") {
    // ivshmem's BAR reads as nothing until the device is enabled (the recipe's echo 1 > enable).
    FILE* f = std::fopen((dev + "/enable").c_str(), "we");
    const bool ok = f && std::fputs("1", f) >= 0;
    if (f && std::fclose(f) != 0) (void)0;
    if (!ok || sysfs_text(dev + "/enable") == "0")
      throw ConfigError("pool '" + path + "': PCI device " + dev +
                        " is disabled and could not be enabled here: echo 1 > " + dev +
                        "/enable (as root) first");
  }
  const std::string vendor = sysfs_text(dev + "/vendor"), device = sysfs_text(dev + "/device");
  p.info.kernel_path = "PCI BAR " + base_name(real) + " of " + dev + " [" + vendor + ":" + device +
                       "]" + (vendor == "0x1af4" && device == "0x1110" ? " (ivshmem)" : "");
}

// Opens `path` read-write and says what it is. With `create`, a missing plain file is made
// (never under /dev or /sys, where a missing name is a missing device).
void probe(Probe& p, const std::string& path, bool create) {
  p.info.path = path;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) throw Error("pool '" + path + "': cannot stat it: " + sys_error());
    const bool device_dir = (starts_with(path, "/dev/") && !starts_with(path, "/dev/shm/")) ||
                            starts_with(path, "/sys/");
    if (!create || device_dir)
      throw ConfigError("no pool named '" + path + "' to attach to (" + path + " does not exist" +
                        (device_dir ? ": no such device" : "") + ")");
    p.fd.fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (p.fd.fd < 0) throw Error("pool '" + path + "': cannot create it: " + sys_error());
    if (fstat(p.fd.fd, &st) != 0) throw Error("pool '" + path + "': fstat failed: " + sys_error());
  } else {
    if (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode))
      throw ConfigError("pool '" + path +
                        "' is neither a device-dax (/dev/daxX.Y), a PCI BAR "
                        "(/sys/bus/pci/devices/D/resource2) nor a plain file");
    p.fd.fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (p.fd.fd < 0)
      throw Error("pool '" + path + "': cannot open it read-write: " + sys_error() +
                  (errno == EACCES ? " (a device usually needs root or its group)" : ""));
    if (fstat(p.fd.fd, &st) != 0) throw Error("pool '" + path + "': fstat failed: " + sys_error());
  }
  if (S_ISCHR(st.st_mode)) return probe_devdax(p, st, path);
  const std::string real = real_path(path);
  if (starts_with(real, "/sys/")) {
    if (base_name(real).rfind("resource", 0) != 0)
      throw ConfigError("pool '" + path + "': a sysfs file that is not a PCI BAR (resourceN)");
    return probe_pci_bar(p, st, path, real);
  }
  p.file = true;
  p.info.kind = "file";
  p.info.source_bytes = static_cast<uint64_t>(st.st_size < 0 ? 0 : st.st_size);
  p.info.filesystem = filesystem_name(p.fd.fd);
  p.info.kernel_path = "file on " + p.info.filesystem +
                       (p.info.filesystem == "tmpfs" ? " (shmem pages)" : " (page cache)");
}

std::string mib(uint64_t b) {
  return b % (uint64_t{1} << 20) == 0 ? std::to_string(b >> 20) + " MiB"
                                      : std::to_string(b) + " bytes";
}

// "3 nodes (memory 64 MiB + 256 KiB device memory, compute 8 MiB, ...), mailboxes 512 x 8 x 512"
std::string geometry_text(const ClusterConfig& c) {
  std::string s = std::to_string(c.size()) + " nodes (";
  for (size_t n = 0; n < c.size(); ++n) {
    const NodeSpec& spec = c.nodes[n];
    s += (n ? ", " : "") + std::string(spec.role == NodeRole::kMemory ? "memory " : "compute ") +
         mib(spec.region_bytes);
    if (spec.device_memory_bytes)
      s += " + " + std::to_string(spec.device_memory_bytes >> 10) + " KiB device memory";
  }
  return s + "), mailboxes " + std::to_string(c.mailbox.mailboxes) + " x " +
         std::to_string(c.mailbox.slots) + " x " + std::to_string(c.mailbox.slot_bytes);
}

bool same_geometry(const ClusterConfig& a, const ClusterConfig& b) {
  if (a.size() != b.size() || a.mailbox.mailboxes != b.mailbox.mailboxes ||
      a.mailbox.slots != b.mailbox.slots || a.mailbox.slot_bytes != b.mailbox.slot_bytes)
    return false;
  for (size_t n = 0; n < a.size(); ++n)
    if (a.nodes[n].role != b.nodes[n].role || a.nodes[n].region_bytes != b.nodes[n].region_bytes ||
        a.nodes[n].device_memory_bytes != b.nodes[n].device_memory_bytes)
      return false;
  return true;
}

}  // namespace source_detail

using namespace source_detail;

uint64_t Pool::source_bytes_needed(const ClusterConfig& config) {
  uint64_t total = 0;
  for (const NodeSpec& spec : config.nodes)
    total += align_up(spec.region_bytes, kSourceAlign) +
             align_up(spec.device_memory_bytes, kSourceAlign);
  return total;
}

std::shared_ptr<Pool> Pool::create(const ClusterConfig& config, const PoolSource& source) {
  if (source.path.empty()) {
    if (source.numa_node < 0) return create(config, std::string());
    ClusterConfig bound = config;
    for (NodeSpec& spec : bound.nodes) spec.numa_node = source.numa_node;
    return create(bound, std::string());
  }
  config.validate();
  const std::string& path = source.path;
  const uint64_t need = source_bytes_needed(config);
  Probe p;
  probe(p, path, true);
  if (p.file && p.info.source_bytes < need) {
    if (ftruncate(p.fd.fd, static_cast<off_t>(need)) != 0)
      throw ConfigError("pool '" + path + "': cannot grow the file to " + mib(need) + ": " +
                        sys_error());
    p.info.source_bytes = need;
  }
  const uint64_t map_bytes = align_up(need, p.align);
  if (map_bytes > p.info.source_bytes)
    throw ConfigError("pool '" + path + "' needs " + mib(map_bytes) + " for " +
                      geometry_text(config) + ", but the " + p.info.kind + " has " +
                      mib(p.info.source_bytes) +
                      ": make the pool smaller (--memory-mb, the cluster file's regions)");
  void* m = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p.fd.fd, 0);
  if (m == MAP_FAILED)
    throw Error("pool '" + path + "': mmap of " + mib(map_bytes) + " failed: " + sys_error());
  std::shared_ptr<Pool> pool(new Pool());
  pool->source_base_ = static_cast<std::byte*>(m);
  pool->source_map_bytes_ = map_bytes;
  pool->config_ = config;
  pool->name_ = path;
  pool->owner_ = true;
  pool->polling_ = true;
  pool->regions_.resize(config.size());
  pool->device_.resize(config.size());
  std::byte* const base = pool->source_base_;
  // First of all: a process attaching from now on finds no pool until node 0 is formatted again.
  local::store_word(base + layout::kMagicOffset, 0);
  // Bound before any page is touched, so that every page comes from the node.
  if (source.numa_node >= 0) {
    if (!p.file)
      throw ConfigError("pool '" + path + "': a " + p.info.kind +
                        " is memory where the device is (NUMA node " +
                        std::to_string(p.info.device_numa_node) +
                        "), mbind cannot move it; to place a pool on a CPU-less node, online "
                        "the memory as that node (daxctl reconfigure-device --mode=system-ram) "
                        "and make the pool on a file in tmpfs with the binding");
    bind_to_numa_node(base, map_bytes, source.numa_node, "pool '" + path + "'");
    pool->numa_bound_ = true;
  }
  std::vector<uint64_t> at(config.size()), dm_at(config.size());
  uint64_t off = 0;
  for (NodeId n = 0; n < config.size(); ++n) {
    const NodeSpec& spec = config.nodes[n];
    at[n] = off;
    off += align_up(spec.region_bytes, kSourceAlign);
    dm_at[n] = off;
    off += align_up(spec.device_memory_bytes, kSourceAlign);
    if (spec.numa_node >= 0) {
      if (!p.file)
        throw ConfigError("pool '" + path + "' node " + std::to_string(n) +
                          ": a NUMA binding needs a pool on a file (a " + p.info.kind +
                          " is memory where the device is)");
      bind_to_numa_node(base + at[n], spec.region_bytes, spec.numa_node,
                        "node " + std::to_string(n));
      pool->numa_bound_ = true;
    }
  }
  // Fresh memory reads as zeros (the allocator and device memory promise it): a file's old bytes
  // go as a hole, cheaply; a device's are overwritten.
  bool zeroed = false;
  if (p.file)
    zeroed = fallocate(p.fd.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                       static_cast<off_t>(need)) == 0;
  if (!zeroed) std::memset(base, 0, need);
  if (p.file) {
    // A sparse file in a full tmpfs would be a SIGBUS later, in whichever process touches it.
    const int rc = posix_fallocate(p.fd.fd, 0, static_cast<off_t>(need));
    if (rc == ENOSPC || rc == ENOMEM || rc == EFBIG)
      throw ConfigError("pool '" + path + "': cannot reserve " + mib(need) + " on " +
                        p.info.filesystem + ": " + std::strerror(rc));
  }
  // Node 0 last: its magic word tells an attaching process the whole pool is ready.
  for (NodeId n = static_cast<NodeId>(config.size()); n-- > 0;) {
    const NodeSpec& spec = config.nodes[n];
    pool->regions_[n] = {base + at[n], spec.region_bytes, spec.role};
    if (spec.device_memory_bytes)
      pool->device_[n] = {base + dm_at[n], spec.device_memory_bytes, spec.role};
    layout::format_region(base + at[n], spec.region_bytes, n, spec.role, config);
  }
  pool->prov_ = p.info;
  pool->prov_.pool_bytes = need;
  pool->prov_.numa_node = source.numa_node;
  pool->model_far_memory(config);
  return pool;
}

// Every word read from the device is untrusted (design principle 8): each region's place and
// size come from the headers before it, each is checked against what the device or file really
// holds before anything is read from it, and attach_regions checks the rest as for named pools.
std::shared_ptr<Pool> Pool::attach(const PoolSource& source, const ClusterConfig* expect) {
  const std::string& path = source.path;
  if (path.empty()) throw ConfigError("attach needs the name or the path of a pool");
  if (source.numa_node >= 0)
    throw ConfigError("pool '" + path +
                      "': its NUMA binding is made by the process that creates it; attaching "
                      "cannot move its pages");
  Probe p;
  probe(p, path, false);
  const uint64_t bytes = p.info.source_bytes;
  if (bytes < layout::kHeaderBytes)
    throw ConfigError("pool '" + path + "' is not initialised (the " + p.info.kind + " has " +
                      std::to_string(bytes) + " bytes, less than a header)");
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p.fd.fd, 0);
  if (m == MAP_FAILED)
    throw Error("pool '" + path + "': mmap of " + mib(bytes) + " failed: " + sys_error());
  std::shared_ptr<Pool> pool(new Pool());
  pool->source_base_ = static_cast<std::byte*>(m);
  pool->source_map_bytes_ = bytes;
  pool->name_ = path;
  pool->polling_ = true;
  std::byte* const base = pool->source_base_;
  const std::string where = "the " + p.info.kind + " holds " + std::to_string(bytes) + " bytes";
  auto bad = [&](size_t n, const std::string& why) {
    return ConfigError("pool '" + path + "' node " + std::to_string(n) + ": " + why +
                       " (a corrupt or foreign pool: create it again)");
  };
  uint64_t next = 0;  // where the next region or device memory starts
  auto map_region = [&](size_t n) {
    const uint64_t at = next;
    if (at > bytes || bytes - at < layout::kHeaderBytes)
      throw bad(n, "its header would be at offset " + std::to_string(at) + ", but " + where +
                       " (truncated, or a header before it lies)");
    std::byte* b = base + at;
    if (local::load_word(b + layout::kMagicOffset) != layout::kMagic) {
      if (n == 0)
        throw ConfigError("pool '" + path + "' is not a dmrt pool, or is still being created");
      throw bad(n, "it is not formatted (no magic word at offset " + std::to_string(at) + ")");
    }
    const uint64_t rb = local::load_word(b + layout::kRegionBytesOffset);
    if (rb < layout::kHeaderBytes || rb > GlobalAddress::kDeviceMemoryBit)
      throw bad(n, "its header says the region is " + std::to_string(rb) + " bytes");
    if (rb > bytes - at)
      throw bad(n, "its header says the region is " + std::to_string(rb) + " bytes at offset " +
                       std::to_string(at) + ", but " + where + " (truncated or resized)");
    pool->regions_[n] = {b, rb, NodeRole::kMemory};
    next = at + align_up(rb, kSourceAlign);
  };
  auto map_device = [&](size_t n, uint64_t dm) {
    const uint64_t at = next;
    if (at > bytes || dm > bytes - at)
      throw bad(n, "its header says it has " + std::to_string(dm) +
                       " bytes of device memory at offset " + std::to_string(at) + ", but " +
                       where + " (truncated or resized)");
    pool->device_[n] = {base + at, dm, pool->regions_[n].role};
    next = at + align_up(dm, kSourceAlign);
  };
  attach_regions(*pool, map_region, map_device);
  if (expect && !same_geometry(pool->config_, *expect))
    throw ConfigError("pool '" + path + "' has another geometry: " + geometry_text(pool->config_) +
                      "; expected " + geometry_text(*expect) +
                      " (create it again with this geometry, or attach without one)");
  pool->prov_ = p.info;
  pool->prov_.pool_bytes = next;
  return pool;
}

PoolProvenance Pool::provenance() const {
  PoolProvenance p = prov_;
  p.numa_bound = numa_bound_;
  p.waits = polling_ ? "polling" : "futex";
  std::map<int, uint64_t> by_node;
  uint64_t bytes = 0;
  for (const std::vector<Region>* rs : {&regions_, &device_})
    for (const Region& r : *rs) {
      if (!r.base || r.bytes == 0) continue;
      bytes += r.bytes;
      const placement::PageNodes where = placement::page_nodes(r.base, r.bytes, 1024);
      if (!where.available) continue;
      for (auto [node, pages] : where.pages) by_node[node] += pages;
      p.pages_sampled += where.sampled;
      p.pages_absent += where.absent;
    }
  if (p.pool_bytes == 0) p.pool_bytes = bytes;
  p.pages_by_numa_node.assign(by_node.begin(), by_node.end());
  return p;
}

}  // namespace dmrt::shm
