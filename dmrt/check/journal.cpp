// HistoryJournal: a history in a file-backed shared mapping (dmrt/check/journal.h).
#include "dmrt/check/journal.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "dmrt/check/history_io.h"

namespace dmrt {
namespace {

constexpr uint64_t kMagic = 0x314e524a54524d44ull;  // "DMRTJRN1"
constexpr uint64_t kHeaderBytes = 4096;
constexpr uint32_t kMaxNodes = 256;
constexpr uint64_t kInvoked = 1, kReturned = 2;

std::string sys_error(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

struct Header {
  uint64_t magic;
  uint64_t ops, rows;          // capacities
  uint64_t next_op, next_row;  // claimed so far (atomic_ref); past the capacity: it filled up
  uint32_t rank, members;
  uint32_t nodes[kMaxNodes];
  uint32_t incarnation;  // History::part_incarnation (0 in journals from before it was kept)
};
static_assert(sizeof(Header) <= kHeaderBytes);

struct Slot {
  Operation op;
  uint64_t state;  // 0 free, 1 invoked, 2 returned (atomic_ref)
};
static_assert(sizeof(Operation) == 56 && sizeof(Slot) == 64);

template <class T>
std::atomic_ref<T> at(T& v) {
  return std::atomic_ref<T>(v);
}
uint64_t journal_bytes(uint64_t ops, uint64_t rows) {
  return kHeaderBytes + ops * 64 + rows * sizeof(ScanRow);
}
Header& header_of(void* base) {
  return *static_cast<Header*>(base);
}
Slot& slot_of(void* base, uint64_t i) {
  return reinterpret_cast<Slot*>(static_cast<char*>(base) + kHeaderBytes)[i];
}
ScanRow* rows_of(void* base) {
  return reinterpret_cast<ScanRow*>(static_cast<char*>(base) + kHeaderBytes +
                                    64 * header_of(base).ops);
}

}  // namespace

std::unique_ptr<HistoryJournal> HistoryJournal::create(const std::string& path, uint64_t ops,
                                                       uint64_t rows, uint32_t rank,
                                                       const std::vector<uint32_t>& nodes,
                                                       uint32_t incarnation) {
  if (nodes.size() > kMaxNodes || rank >= std::max<size_t>(nodes.size(), 1))
    throw std::runtime_error("journal " + path + ": rank " + std::to_string(rank) + " of " +
                             std::to_string(nodes.size()) + " nodes");
  const uint64_t bytes = journal_bytes(ops, rows);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(sys_error("cannot create the journal", path));
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const std::string e = sys_error("cannot size the journal", path);
    ::close(fd);
    throw std::runtime_error(e);
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) throw std::runtime_error(sys_error("cannot map the journal", path));
  std::unique_ptr<HistoryJournal> j(new HistoryJournal(path, base, bytes));
  Header& h = header_of(j->base_);
  h.ops = ops;
  h.rows = rows;
  h.rank = rank;
  h.incarnation = incarnation;
  h.members = static_cast<uint32_t>(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) h.nodes[i] = nodes[i];
  at(h.magic).store(kMagic, std::memory_order_release);  // last: a reader sees a whole header
  return j;
}

HistoryJournal::HistoryJournal(std::string path, void* base, size_t bytes)
    : path_(std::move(path)), base_(base), bytes_(bytes) {}

HistoryJournal::~HistoryJournal() {
  if (base_) ::munmap(base_, bytes_);
}

size_t HistoryJournal::invoke(const Operation& op) {
  Header& h = header_of(base_);
  const uint64_t i = at(h.next_op).fetch_add(1, std::memory_order_relaxed);
  if (i >= h.ops) return kFull;
  Slot& s = slot_of(base_, i);
  s.op = op;
  s.op.response_ns = kNoResponse;
  at(s.state).store(kInvoked, std::memory_order_release);
  return i;
}

void HistoryJournal::respond(size_t i, bool ok, uint64_t out, uint64_t response_ns) {
  if (i == kFull) return;
  Slot& s = slot_of(base_, i);
  s.op.ok = ok;
  s.op.out = out;
  s.op.response_ns = response_ns;
  at(s.state).store(kReturned, std::memory_order_release);
}

void HistoryJournal::respond_scan(size_t i, std::span<const ScanRow> rows, uint64_t response_ns) {
  if (i == kFull) return;
  Header& h = header_of(base_);
  const uint64_t first = at(h.next_row).fetch_add(rows.size(), std::memory_order_relaxed);
  // Full: the slot stays pending; the reader sees next_row past the capacity and refuses.
  if (first + rows.size() > h.rows) return;
  std::memcpy(rows_of(base_) + first, rows.data(), rows.size_bytes());
  Slot& s = slot_of(base_, i);
  s.op.out = first;
  s.op.rows = static_cast<uint32_t>(rows.size());
  s.op.response_ns = response_ns;
  at(s.state).store(kReturned, std::memory_order_release);
}

void HistoryJournal::discard() {
  ::unlink(path_.c_str());
}

bool is_history_journal(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  uint64_t magic = 0;
  const bool yes = ::pread(fd, &magic, 8, 0) == 8 && magic == kMagic;
  ::close(fd);
  return yes;
}

History load_history_journal(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw HistoryFormatError(sys_error("cannot open the journal", path));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < kHeaderBytes) {
    ::close(fd);
    throw HistoryFormatError(path + ": not a history journal (shorter than its header)");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) throw HistoryFormatError(sys_error("cannot map the journal", path));
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{base, size};
  // Every header word is checked before it is used: a journal is a file anyone may hand over.
  const auto& h = *static_cast<const Header*>(base);
  if (h.magic != kMagic) throw HistoryFormatError(path + ": not a history journal (no magic)");
  if (h.ops > (size - kHeaderBytes) / 64 || journal_bytes(h.ops, h.rows) != size ||
      h.members > kMaxNodes || (h.members > 0 && h.rank >= h.members) || h.incarnation >= 65536)
    throw HistoryFormatError(path + ": a history journal whose header does not match its size");
  if (h.next_op > h.ops || h.next_row > h.rows)
    throw HistoryTruncated(path + ": the journal filled up (" + std::to_string(h.ops) +
                           " operations, " + std::to_string(h.rows) +
                           " scan rows): operations after that are missing");
  const auto* slots = reinterpret_cast<const Slot*>(static_cast<const char*>(base) + kHeaderBytes);
  const auto* rows =
      reinterpret_cast<const ScanRow*>(static_cast<const char*>(base) + kHeaderBytes + 64 * h.ops);
  History out;
  out.part_rank = h.rank;
  out.part_incarnation = h.incarnation;
  out.part_nodes.assign(h.nodes, h.nodes + h.members);
  for (uint64_t i = 0; i < h.next_op; ++i) {
    const uint64_t state = slots[i].state;
    if (state == 0) continue;  // claimed, not yet written: the operation had not started
    if (state != kInvoked && state != kReturned)
      throw HistoryFormatError(path + ": slot " + std::to_string(i) + " has state " +
                               std::to_string(state));
    Operation op = slots[i].op;
    if (static_cast<unsigned>(op.kind) > static_cast<unsigned>(OpKind::kRmw))
      throw HistoryFormatError(path + ": slot " + std::to_string(i) + " has no operation kind");
    if (state == kInvoked) {
      op.response_ns = kNoResponse;
      op.ok = op.kind == OpKind::kScan;
      op.out = 0;
      op.rows = 0;
    } else if (op.kind == OpKind::kScan) {
      if (op.out > h.next_row || op.rows > h.next_row - op.out)
        throw HistoryFormatError(path + ": slot " + std::to_string(i) + "'s rows lie outside");
      const uint64_t first = out.scan_rows.size();
      out.scan_rows.insert(out.scan_rows.end(), rows + op.out, rows + op.out + op.rows);
      op.out = first;
    }
    out.ops.push_back(op);
  }
  return out;
}

}  // namespace dmrt
