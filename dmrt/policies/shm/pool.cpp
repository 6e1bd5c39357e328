#include "dmrt/policies/shm/pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

#include "dmrt/policies/shm/numa_bind.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/machine.h"
#include "dmrt/runtime/messaging.h"

namespace dmrt::shm {

namespace {
std::string errno_text() {
  return std::strerror(errno);
}

// `device`: the node's device memory (its own object, name suffix ".dm").
int open_region(const std::string& pool, NodeId n, bool create, bool device = false) {
  const std::string suffix = device ? ".dm" : "";
  if (pool.empty()) {
    int fd = memfd_create(("dmrt-node-" + std::to_string(n) + suffix).c_str(), MFD_CLOEXEC);
    if (fd < 0) throw Error("memfd_create failed: " + errno_text());
    return fd;
  }
  std::string obj = shm_object_name(pool, n) + suffix;
  int flags = create ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR;
  int fd = shm_open(obj.c_str(), flags, 0600);
  if (fd < 0) {
    if (create && errno == EEXIST)
      throw ConfigError("a pool named '" + pool + "' already exists (" + obj +
                        "); pick another name or remove /dev/shm" + obj);
    if (!create && errno == ENOENT)
      throw ConfigError("no pool named '" + pool + "' to attach to (" + obj + " not found)");
    throw Error("shm_open(" + obj + ") failed: " + errno_text());
  }
  return fd;
}

// Closes on every exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Where shm_open puts its objects (glibc on Linux).
constexpr const char* kShmDir = "/dev/shm";

std::string bytes_text(uint64_t b) {
  return std::to_string(b) + " bytes (" + std::to_string(b >> 20) + " MiB)";
}

// "/dev/shm (tmpfs, 64 MiB free of 64 MiB)".
std::string shm_fs_text() {
  struct statvfs v;
  if (statvfs(kShmDir, &v) != 0) return kShmDir;
  const uint64_t unit = v.f_frsize ? v.f_frsize : v.f_bsize;
  return std::string(kShmDir) + " (" + std::to_string((uint64_t{v.f_bavail} * unit) >> 20) +
         " MiB free of " + std::to_string((uint64_t{v.f_blocks} * unit) >> 20) + " MiB)";
}

// Named pools live in /dev/shm, a tmpfs with a size of its own (64 MiB in a default container).
// A sparse object there (ftruncate alone) dies with SIGBUS at the first page tmpfs cannot supply,
// in whichever process touches it. So a named pool is refused when the filesystem has less room
// than the pool, and each object is then reserved whole (reserve_object).
void check_shm_space(const std::string& pool, uint64_t total) {
  struct statvfs v;
  if (statvfs(kShmDir, &v) != 0 || v.f_blocks == 0) return;  // no size to go by
  const uint64_t unit = v.f_frsize ? v.f_frsize : v.f_bsize;
  const uint64_t avail = uint64_t{v.f_bavail} * unit;
  if (avail < total)
    throw ConfigError("pool '" + pool + "' needs " + bytes_text(total) + " of shared memory, but " +
                      shm_fs_text() +
                      " cannot hold it: enlarge /dev/shm (mount -o remount,size=...; docker run "
                      "--shm-size=...) or make the pool smaller");
}

// Allocates every page of a named pool's object now (posix_fallocate), so that running out of
// /dev/shm is this error at creation and never a SIGBUS later. A filesystem that cannot
// reserve (EOPNOTSUPP) leaves the object sparse.
void reserve_object(int fd, uint64_t bytes, const std::string& pool, const std::string& what) {
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc == 0 || rc == EOPNOTSUPP || rc == EINVAL) return;
  if (rc == ENOSPC || rc == ENOMEM || rc == EFBIG)
    throw ConfigError("pool '" + pool + "': cannot reserve " + bytes_text(bytes) + " for " + what +
                      " in " + shm_fs_text() + ": " + std::strerror(rc) +
                      "; enlarge /dev/shm (mount -o remount,size=...; docker run --shm-size=...) "
                      "or make the pool smaller");
  throw Error("pool '" + pool + "': cannot reserve " + bytes_text(bytes) + " for " + what + ": " +
              std::strerror(rc));
}
}  // namespace

std::string shm_object_name(const std::string& pool, NodeId node) {
  return "/dmrt." + pool + "." + std::to_string(node);
}

namespace {
// The first word of a sysfs setting's bracketed choice ("always [madvise] never" -> "madvise"),
// or "" when the file is absent.
std::string sysfs_choice(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[256] = {};
  ssize_t got = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (got <= 0) return "";
  std::string text(buf, static_cast<size_t>(got));
  size_t open_at = text.find('['), close_at = text.find(']');
  if (open_at == std::string::npos || close_at < open_at) return "";
  return text.substr(open_at + 1, close_at - open_at - 1);
}

constexpr uint64_t kHugePage = uint64_t{2} << 20;
}  // namespace

// Transparent huge pages for private anonymous memory: the kernel's setting allows them on
// request (madvise) or always.
bool Pool::anonymous_thp_available() {
  const std::string c = sysfs_choice("/sys/kernel/mm/transparent_hugepage/enabled");
  return c == "always" || c == "madvise";
}

// An anonymous pool is this process's alone (its memfds are close-on-exec and have no name), so
// its regions need not be shared memory: private anonymous memory, 2 MiB aligned, on transparent
// huge pages where the kernel allows them. Shared memory (memfd, shm_open) gets huge pages only
// with shmem THP (/sys/kernel/mm/transparent_hugepage/shmem_enabled), off on many hosts; a random
// verb on 4 KiB pages then misses the TLB as well as the cache, and under virtualisation the page
// walk is two-dimensional (docs/results.md, "shm against local peers": a dependent miss into a
// 128 MiB region cost ~300 ns on 4 KiB pages, ~195 ns on 2 MiB pages on the development VM).
// Null when the kernel allows no huge pages here, or the mapping fails: the caller falls back.
std::byte* Pool::map_anonymous_huge(uint64_t bytes) {
  if (!anonymous_thp_available()) return nullptr;
  const uint64_t len = bytes + kHugePage;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto start = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) munmap(p, aligned - start);
  if (uintptr_t end = start + len, used = aligned + bytes; end > used)
    munmap(reinterpret_cast<void*>(used), end - used);
  auto* base = reinterpret_cast<std::byte*>(aligned);
  if (madvise(base, bytes, MADV_HUGEPAGE) != 0) {
    munmap(base, bytes);
    return nullptr;
  }
  return base;
}

uint64_t Pool::huge_page_bytes() const {
  // /proc/self/smaps: a mapping's header line starts with its lowercase hex range, its fields
  // with a capitalised name. Sums the huge-page fields of the mappings that overlap a region.
  FILE* f = std::fopen("/proc/self/smaps", "re");
  if (!f) return 0;
  uint64_t total = 0;
  bool ours = false;
  char line[512];
  while (std::fgets(line, sizeof(line), f)) {
    unsigned long lo = 0, hi = 0, kb = 0;
    const char c = line[0];
    if (((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) &&
        std::sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
      ours = false;
      for (const Region& r : regions_) {
        const auto b = reinterpret_cast<unsigned long>(r.base);
        if (r.base && lo < b + r.bytes && b < hi) ours = true;
      }
    } else if (ours && (std::sscanf(line, "AnonHugePages: %lu kB", &kb) == 1 ||
                        std::sscanf(line, "ShmemPmdMapped: %lu kB", &kb) == 1 ||
                        std::sscanf(line, "Private_Hugetlb: %lu kB", &kb) == 1 ||
                        std::sscanf(line, "Shared_Hugetlb: %lu kB", &kb) == 1)) {
      total += uint64_t{kb} << 10;
    }
  }
  std::fclose(f);
  return total;
}

void Pool::map_node(NodeId n, int fd, uint64_t bytes, NodeRole role) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    throw Error("mmap of node " + std::to_string(n) + " region (" + std::to_string(bytes) +
                " bytes) failed: " + errno_text());
  }
  regions_[n] = {static_cast<std::byte*>(p), bytes, role};
}

void Pool::map_device(NodeId n, int fd, uint64_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    throw Error("mmap of node " + std::to_string(n) + " device memory (" + std::to_string(bytes) +
                " bytes) failed: " + errno_text());
  }
  device_[n] = {static_cast<std::byte*>(p), bytes, regions_[n].role};
}

std::shared_ptr<Pool> Pool::create(const ClusterConfig& config, const std::string& name) {
  config.validate();
  // Every region's header and mailboxes are written now, in this process: refuse up front what
  // the machine cannot hold rather than die in the middle of formatting.
  require_memory(config.formatted_bytes(),
                 "the headers and mailboxes of " + std::to_string(config.size()) + " nodes");
  // A named pool's objects are reserved whole (reserve_object): refuse at once a /dev/shm that
  // cannot hold them all, before any is made.
  if (!name.empty()) {
    uint64_t total = 0;
    for (const NodeSpec& spec : config.nodes) total += spec.region_bytes + spec.device_memory_bytes;
    check_shm_space(name, total);
  }
  std::shared_ptr<Pool> pool(new Pool());
  pool->config_ = config;
  pool->name_ = name;
  pool->owner_ = true;
  pool->regions_.resize(config.size());
  pool->device_.resize(config.size());
  bool all_huge = true;
  // Node 0 is formatted last: its magic word tells an attaching process the whole pool is ready.
  for (NodeId n = static_cast<NodeId>(config.size()); n-- > 0;) {
    const NodeSpec& spec = config.nodes[n];
    std::byte* huge = name.empty() ? map_anonymous_huge(spec.region_bytes) : nullptr;
    Fd fd;
    if (huge) {
      pool->regions_[n] = {huge, spec.region_bytes, spec.role};
    } else {
      all_huge = false;
      fd.fd = open_region(name, n, true);
      if (ftruncate(fd.fd, static_cast<off_t>(spec.region_bytes)) != 0)
        throw Error("cannot size node " + std::to_string(n) + " region: " + errno_text());
      pool->map_node(n, fd.fd, spec.region_bytes, spec.role);
    }
    if (spec.device_memory_bytes) {  // a fresh object reads as zeros: formatted
      Fd dfd{open_region(name, n, true, true)};
      if (ftruncate(dfd.fd, static_cast<off_t>(spec.device_memory_bytes)) != 0)
        throw Error("cannot size node " + std::to_string(n) + " device memory: " + errno_text());
      pool->map_device(n, dfd.fd, spec.device_memory_bytes);
      if (!name.empty())
        reserve_object(dfd.fd, spec.device_memory_bytes, name,
                       "node " + std::to_string(n) + " device memory");
    }
    std::byte* base = pool->regions_[n].base;
    if (spec.numa_node >= 0) {
      bind_to_numa_node(base, spec.region_bytes, spec.numa_node, "node " + std::to_string(n));
      pool->numa_bound_ = true;
    }
    // After mbind: the reserved pages follow the object's NUMA policy.
    if (!name.empty() && fd.fd >= 0)
      reserve_object(fd.fd, spec.region_bytes, name, "node " + std::to_string(n) + " region");
    layout::format_region(base, spec.region_bytes, n, spec.role, config);
  }
  pool->pages_ = all_huge ? "thp" : "4k";
  if (name.empty()) {
    pool->prov_.kind = "memfd";
    pool->prov_.kernel_path =
        all_huge ? "private anonymous memory (THP), this process's" : "memfds, this process's";
  } else {
    pool->prov_.kind = "shm";
    pool->prov_.path = std::string(kShmDir) + "/dmrt." + name + ".*";
    pool->prov_.kernel_path = "POSIX shared memory objects (shm_open), one per node";
    pool->prov_.filesystem = "tmpfs";
  }
  pool->model_far_memory(config);
  return pool;
}

void Pool::model_far_memory(const ClusterConfig& config) {
  if (config.size() != regions_.size())
    throw ConfigError("far-memory costs for " + std::to_string(config.size()) +
                      " nodes, but the pool has " + std::to_string(regions_.size()));
  if (!FarMemory::any(config)) return;
  auto now = std::chrono::steady_clock::now().time_since_epoch();
  far_ = std::make_unique<FarMemory>(
      config,
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
  for (NodeId n = 0; n < config.size(); ++n) config_.nodes[n].far = config.nodes[n].far;
  set_hook(kFarMemory, true);
}

// The pool's bytes are untrusted input (design principle 8): another process, or anyone who can
// write /dev/shm/dmrt.*, may have written anything into a header. Every word attach uses is
// checked before it sizes a loop, a vector or a mapping; mappings take their size from fstat,
// and a header that disagrees with its object is refused.
std::shared_ptr<Pool> Pool::attach(const std::string& name) {
  if (name.empty()) throw ConfigError("attach needs the name of a pool");
  std::shared_ptr<Pool> pool(new Pool());
  pool->name_ = name;
  // An object's real size, which is all a mapping of it may cover.
  auto object_bytes = [&](int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) throw Error("fstat of pool '" + name + "' failed: " + errno_text());
    return static_cast<uint64_t>(st.st_size < 0 ? 0 : st.st_size);
  };
  auto map_region = [&](size_t n) {
    Fd fd{open_region(name, static_cast<NodeId>(n), false)};
    const uint64_t bytes = object_bytes(fd.fd);
    if (bytes < layout::kHeaderBytes)
      throw ConfigError("pool '" + name + "' node " + std::to_string(n) +
                        " is not initialised (its object is " + std::to_string(bytes) +
                        " bytes, less than a header)");
    if (bytes > GlobalAddress::kDeviceMemoryBit)
      throw ConfigError("pool '" + name + "' node " + std::to_string(n) + ": its object is " +
                        std::to_string(bytes) +
                        " bytes, more than 2^47 (a corrupt or foreign pool: remove it and create "
                        "it again)");
    pool->map_node(static_cast<NodeId>(n), fd.fd, bytes, NodeRole::kMemory);
  };
  auto map_device = [&](size_t n, uint64_t dm) {
    Fd dfd{open_region(name, static_cast<NodeId>(n), false, true)};
    const uint64_t real = object_bytes(dfd.fd);
    if (real != dm)
      throw ConfigError("pool '" + name + "' node " + std::to_string(n) +
                        ": its header says it has " + std::to_string(dm) +
                        " bytes of device memory but that object is " + std::to_string(real) +
                        " bytes (truncated or resized) (a corrupt or foreign pool: remove it and "
                        "create it again)");
    pool->map_device(static_cast<NodeId>(n), dfd.fd, dm);
  };
  attach_regions(*pool, map_region, map_device);
  pool->prov_.kind = "shm";
  pool->prov_.path = std::string(kShmDir) + "/dmrt." + name + ".*";
  pool->prov_.kernel_path = "POSIX shared memory objects (shm_open), one per node";
  pool->prov_.filesystem = "tmpfs";
  return pool;
}

void Pool::attach_regions(Pool& pool, const std::function<void(size_t)>& map_region,
                          const std::function<void(size_t, uint64_t)>& map_device) {
  const std::string& name = pool.name_;
  auto bad = [&](size_t n, const std::string& why) {
    return ConfigError("pool '" + name + "' node " + std::to_string(n) + ": " + why +
                       " (a corrupt or foreign pool: remove it and create it again)");
  };
  // Node 0 tells how many nodes there are and the mailbox geometry.
  pool.regions_.resize(1);
  pool.device_.resize(1);
  map_region(0);
  std::byte* b0 = pool.regions_[0].base;
  const uint64_t bytes0 = pool.regions_[0].bytes;
  if (local::load_word(b0 + layout::kMagicOffset) != layout::kMagic)
    throw ConfigError("pool '" + name + "' is not a dmrt pool, or is still being created");
  const uint64_t count = local::load_word(b0 + layout::kNodeCountOffset);
  if (count == 0 || count > ClusterConfig::kMaxNodes)
    throw bad(0, "its header says the pool has " + std::to_string(count) + " nodes (1 to " +
                     std::to_string(ClusterConfig::kMaxNodes) + " can be)");
  const uint64_t geom = local::load_word(b0 + layout::kMailboxGeomOffset);
  const uint64_t slot_bytes = local::load_word(b0 + layout::kSlotBytesOffset);
  MailboxGeometry& g = pool.config_.mailbox;
  g.mailboxes = static_cast<uint32_t>(geom & 0xffffffff);
  g.slots = static_cast<uint32_t>(geom >> 32);
  g.slot_bytes = static_cast<uint32_t>(slot_bytes);
  // The geometry's limits (ClusterConfig::validate) before any product of it is taken.
  try {
    ClusterConfig probe;
    probe.mailbox = g;
    probe.nodes.push_back({NodeRole::kMemory, bytes0, -1, "", 0, {}});
    if (slot_bytes > MailboxGeometry::kMaxSlotBytes)
      throw ConfigError("mailbox.slot_bytes must be a multiple of 64 in [128, " +
                        std::to_string(MailboxGeometry::kMaxSlotBytes) + "]");
    probe.validate();
  } catch (const ConfigError& e) {
    throw bad(0, std::string("its header's mailbox geometry is wrong: ") + e.what());
  }
  pool.regions_.resize(count);
  pool.device_.resize(count);
  pool.config_.nodes.resize(count);
  for (size_t n = 0; n < count; ++n) {
    if (n > 0) {
      try {
        map_region(n);
      } catch (const ConfigError& e) {
        throw ConfigError(std::string(e.what()) + "; node 0's header says the pool has " +
                          std::to_string(count) + " nodes");
      }
    }
    std::byte* b = pool.regions_[n].base;
    const uint64_t bytes = pool.regions_[n].bytes;
    auto word = [&](uint64_t offset) { return local::load_word(b + offset); };
    if (n > 0 && word(layout::kMagicOffset) != layout::kMagic)
      throw bad(n, "it is not formatted (no magic word)");
    if (word(layout::kVersionOffset) != layout::kVersion)
      throw bad(n, "layout version " + std::to_string(word(layout::kVersionOffset)) +
                       ", this program reads version " + std::to_string(layout::kVersion));
    if (word(layout::kRegionBytesOffset) != bytes)
      throw bad(n, "its header says the region is " +
                       std::to_string(word(layout::kRegionBytesOffset)) +
                       " bytes but its shared memory object is " + std::to_string(bytes) +
                       " bytes (truncated or resized)");
    if (n > 0 &&
        (word(layout::kNodeCountOffset) != count || word(layout::kMailboxGeomOffset) != geom ||
         word(layout::kSlotBytesOffset) != slot_bytes))
      throw bad(n, "its header's node count or mailbox geometry differs from node 0's");
    const uint64_t info = word(layout::kNodeInfoOffset);
    if ((info & 0xffff) != n || (info >> 24) != 0 || ((info >> 16) & 0xff) > 1)
      throw bad(
          n, "its header's node word " + std::to_string(info) + " names another node or no role");
    const NodeRole role = static_cast<NodeRole>((info >> 16) & 0xff);
    pool.regions_[n].role = role;
    if (bytes < layout::heap_start(g) + 4096)
      throw bad(n, "its region of " + std::to_string(bytes) +
                       " bytes is smaller than its header and mailboxes need (" +
                       std::to_string(layout::heap_start(g) + 4096) + " bytes)");
    const uint64_t dm = word(layout::kDeviceMemoryBytesOffset);
    if (dm > NodeSpec::kMaxDeviceMemoryBytes || dm % 64)
      throw bad(n, "its header says it has " + std::to_string(dm) +
                       " bytes of device memory (a multiple of 64, at most 1 GiB, can be)");
    pool.config_.nodes[n] = {role, bytes, -1, "", dm, {}};
    if (dm) map_device(n, dm);
  }
  try {
    pool.config_.validate();
  } catch (const ConfigError& e) {
    throw ConfigError("pool '" + name + "': " + e.what() +
                      " (a corrupt or foreign pool: remove it and create it again)");
  }
}

Pool::~Pool() {
  if (source_base_) {  // a pool from a device or file: one mapping, and the path stays
    // Its creator closes it: a process that attaches later waits for the next creator instead of
    // using a pool nobody serves.
    if (owner_) local::store_word(source_base_ + layout::kMagicOffset, 0);
    munmap(source_base_, source_map_bytes_);
    return;
  }
  for (size_t n = 0; n < regions_.size(); ++n) {
    const auto id = static_cast<NodeId>(n);
    if (regions_[n].base) munmap(regions_[n].base, regions_[n].bytes);
    if (n < device_.size() && device_[n].base) munmap(device_[n].base, device_[n].bytes);
    // Only what this process created: a create() that failed half-way (the name was taken)
    // must not remove another pool's objects.
    if (owner_ && !name_.empty() && regions_[n].base) {
      shm_unlink(shm_object_name(name_, id).c_str());
      if (n < device_.size() && device_[n].base)
        shm_unlink((shm_object_name(name_, id) + ".dm").c_str());
    }
  }
}

uint64_t Pool::heap_used(NodeId n) const {
  const Region& r = regions_.at(n);
  uint64_t bump = std::min(local::load_word(r.base + layout::kBumpOffset), r.bytes);
  uint64_t start = layout::heap_start(config_.mailbox);
  return bump > start ? bump - start : 0;  // the bump word is pool bytes: never below the heap
}

}  // namespace dmrt::shm
