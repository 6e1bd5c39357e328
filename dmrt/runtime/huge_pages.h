// HugePageMemory: private zeroed memory on 2 MiB pages where the kernel allows, for tables probed
// at random.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

namespace dmrt {

// Private anonymous memory, zero-filled. Once it is at least one huge page large it starts on a
// 2 MiB boundary, its length is rounded up to whole huge pages, and it is advised MADV_HUGEPAGE: a
// hint, so without transparent huge pages it is 4 KiB pages as before. For this process's own
// tables whose loads land on random lines (a hotspot buffer, a hot-node cache, a skiplist's node
// arena): on 4 KiB pages nearly every such load also misses the TLB, and under a hypervisor a TLB
// miss is a two-dimensional page walk. Region memory, which a transport serves, is mapped by the
// transport (dmrt/policies/shm/pool.cpp, dmrt/policies/verbs/cluster.cpp).
class HugePageMemory {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  HugePageMemory() = default;
  // Throws std::bad_alloc when the kernel refuses the mapping.
  explicit HugePageMemory(size_t bytes) {
    if (bytes == 0) return;
    const bool huge = bytes >= kHugePage;
    const size_t len = huge ? (bytes + kHugePage - 1) / kHugePage * kHugePage : bytes;
    map_bytes_ = huge ? len + kHugePage : len;  // room to move the start to a huge-page boundary
    map_ = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      throw std::bad_alloc();
    }
    auto at = reinterpret_cast<uintptr_t>(map_);
    if (huge) {
      at = (at + kHugePage - 1) & ~(kHugePage - 1);
      ::madvise(reinterpret_cast<void*>(at), len, MADV_HUGEPAGE);
    }
    data_ = reinterpret_cast<std::byte*>(at);
    bytes_ = bytes;
  }
  HugePageMemory(HugePageMemory&& o) noexcept
      : map_(std::exchange(o.map_, nullptr)),
        map_bytes_(std::exchange(o.map_bytes_, 0)),
        data_(std::exchange(o.data_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)) {}
  HugePageMemory& operator=(HugePageMemory&& o) noexcept {
    if (this != &o) {
      release();
      map_ = std::exchange(o.map_, nullptr);
      map_bytes_ = std::exchange(o.map_bytes_, 0);
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  HugePageMemory(const HugePageMemory&) = delete;
  HugePageMemory& operator=(const HugePageMemory&) = delete;
  ~HugePageMemory() { release(); }

  std::byte* data() const { return data_; }
  size_t size() const { return bytes_; }  // as asked for (the mapping may be larger)

 private:
  void release() noexcept {
    if (map_) ::munmap(map_, map_bytes_);
    map_ = nullptr;
    map_bytes_ = 0;
    data_ = nullptr;
    bytes_ = 0;
  }
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  std::byte* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace dmrt
