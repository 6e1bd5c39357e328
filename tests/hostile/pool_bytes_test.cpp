// The pool as untrusted bytes (issue 39): a pool whose header words, object sizes or mailbox
// words are hostile gives a clear error or a dropped message, never a signal, a hang or an
// unkillable process. Every attach and every ring call here runs in a child process under an
// alarm, so that a regression shows as a named failure (the signal, or "hung") and not as a dead
// test binary.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dmrt/policies/shm/pool.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/layout.h"
#include "dmrt/runtime/local_memory.h"
#include "dmrt/runtime/messaging.h"

namespace dmrt {
namespace {

// Runs `body` in a child under a `seconds` alarm. Returns "" when the child exited 0, else what
// happened to it: the signal ("signal 7", SIGBUS) or "hung" (the alarm), or its exit code.
std::string in_child(const std::function<void()>& body, unsigned seconds = 20) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(seconds);
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child threw: %s\n", e.what());
      _exit(3);
    }
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st)) return WEXITSTATUS(st) == 0 ? "" : "exit " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st))
    return WTERMSIG(st) == SIGALRM ? "hung" : "signal " + std::to_string(WTERMSIG(st));
  return "unknown";
}

// Attaches to `name` and reports: "ok", or the ConfigError's text. Anything else (another
// exception, a signal, a hang) makes the child fail.
std::string attach_outcome(const std::string& name) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::string fate = in_child([&] {
    close(fds[0]);
    std::string text = "ok";
    try {
      auto p = shm::Pool::attach(name);
    } catch (const ConfigError& e) {
      text = e.what();
    }
    if (write(fds[1], text.data(), text.size()) < 0) _exit(4);
  });
  close(fds[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  close(fds[0]);
  return fate.empty() ? text : "child " + fate + ": " + text;
}

class HostilePool : public ::testing::Test {
 protected:
  void SetUp() override {
    name_ = "hostile" + std::to_string(getpid());
    pool_ = shm::Pool::create(ClusterConfig::embedded(1, 1, uint64_t{16} << 20, uint64_t{8} << 20),
                              name_);
  }
  std::byte* header(NodeId n) { return pool_->region(n).base; }
  uint64_t get(NodeId n, uint64_t offset) { return local::load_word(header(n) + offset); }
  void set(NodeId n, uint64_t offset, uint64_t v) { local::store_word(header(n) + offset, v); }
  // Writes `v` at `offset` of node n, attaches, puts the word back; the attach's outcome.
  std::string with_word(NodeId n, uint64_t offset, uint64_t v) {
    uint64_t old = get(n, offset);
    set(n, offset, v);
    std::string r = attach_outcome(name_);
    set(n, offset, old);
    return r;
  }
  std::string name_;
  std::shared_ptr<shm::Pool> pool_;
};

#define EXPECT_REFUSED(outcome, words)                                                    \
  do {                                                                                    \
    std::string o_ = (outcome);                                                           \
    EXPECT_NE(o_.find("pool '"), std::string::npos) << o_;                                \
    EXPECT_NE(o_.find(words), std::string::npos) << "want \"" << (words) << "\": " << o_; \
  } while (0)

TEST_F(HostilePool, AnIntactPoolAttaches) {
  EXPECT_EQ(attach_outcome(name_), "ok");
}

// A node-count word of 65536 or more looped for ever (a uint16_t counter wrapped).
TEST_F(HostilePool, NodeCountOutOfRangeIsRefused) {
  for (uint64_t count :
       {uint64_t{0}, uint64_t{65536}, uint64_t{65537}, uint64_t{1} << 32, ~uint64_t{0}})
    EXPECT_REFUSED(with_word(0, layout::kNodeCountOffset, count), "nodes (1 to 65535 can be)");
  // In range, but node 1 says otherwise.
  EXPECT_REFUSED(with_word(0, layout::kNodeCountOffset, 65535), "differs from node 0's");
  // In range, on both, but more than exist: the missing object is named.
  set(1, layout::kNodeCountOffset, 3);
  std::string o = with_word(0, layout::kNodeCountOffset, 3);
  set(1, layout::kNodeCountOffset, 2);
  EXPECT_NE(o.find("no pool named '" + name_ + "' to attach to (/dmrt." + name_ + ".2 not found)"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("node 0's header says the pool has 3 nodes"), std::string::npos) << o;
}

// Geometry words that ended in SIGFPE, std::bad_alloc or a mapping past the object.
TEST_F(HostilePool, MailboxGeometryIsValidatedBeforeUse) {
  const uint64_t geom = get(0, layout::kMailboxGeomOffset);
  for (uint64_t g :
       {uint64_t{0}, geom & 0xffffffff, geom >> 32 << 32, (geom >> 32) | (uint64_t{3} << 32),
        (geom & 0xffffffff) | (uint64_t{1} << 62), ~uint64_t{0}})
    EXPECT_REFUSED(with_word(0, layout::kMailboxGeomOffset, g), "mailbox geometry");
  for (uint64_t sb : {uint64_t{0}, uint64_t{16}, uint64_t{100}, uint64_t{1} << 32,
                      (uint64_t{1} << 32) + 512, ~uint64_t{0}})
    EXPECT_REFUSED(with_word(0, layout::kSlotBytesOffset, sb), "mailbox geometry");
  // Valid limits, but mailboxes that do not fit the 16 MiB region.
  EXPECT_REFUSED(with_word(0, layout::kMailboxGeomOffset, 65536 | (uint64_t{65536} << 32)),
                 "smaller than its header and mailboxes need");
  // Node 1 disagreeing with node 0.
  EXPECT_REFUSED(with_word(1, layout::kSlotBytesOffset, 1024), "differs from node 0's");
}

TEST_F(HostilePool, OtherHeaderWordsAreChecked) {
  EXPECT_REFUSED(with_word(0, layout::kMagicOffset, 0), "is not a dmrt pool");
  EXPECT_REFUSED(with_word(1, layout::kMagicOffset, 0), "not formatted");
  EXPECT_REFUSED(with_word(0, layout::kVersionOffset, 99), "layout version 99");
  EXPECT_REFUSED(with_word(1, layout::kRegionBytesOffset, uint64_t{1} << 40),
                 "truncated or resized");
  EXPECT_REFUSED(with_word(1, layout::kNodeInfoOffset, 0), "names another node");
  EXPECT_REFUSED(with_word(1, layout::kNodeInfoOffset, 1 | (uint64_t{9} << 16)),
                 "names another node or no role");
  // Both nodes compute: no memory node.
  EXPECT_REFUSED(with_word(0, layout::kNodeInfoOffset, uint64_t{1} << 16), "no memory node");
  for (uint64_t dm : {uint64_t{1} << 40, uint64_t{100}, ~uint64_t{0}})
    EXPECT_REFUSED(with_word(0, layout::kDeviceMemoryBytesOffset, dm), "bytes of device memory");
  // Device memory the header claims but whose object is smaller.
  EXPECT_REFUSED(with_word(0, layout::kDeviceMemoryBytesOffset, uint64_t{1} << 20),
                 "truncated or resized");
}

// A truncated region or device-memory object: the mapping would have covered pages that do not
// exist (SIGBUS at the first touch). Now a ConfigError from fstat.
TEST_F(HostilePool, TruncatedObjectsAreAClearErrorNotSigbus) {
  const std::string node1 = shm::shm_object_name(name_, 1);
  int fd = shm_open(node1.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 1 << 20), 0);  // the header still says 8 MiB
  EXPECT_REFUSED(attach_outcome(name_), "truncated or resized");
  ASSERT_EQ(ftruncate(fd, 100), 0);  // less than a header
  EXPECT_REFUSED(attach_outcome(name_), "is not initialised");
  close(fd);
  const std::string dm0 = shm::shm_object_name(name_, 0) + ".dm";
  fd = shm_open(dm0.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  close(fd);
  // Node 1 is refused first; give it back its size.
  fd = shm_open(node1.c_str(), O_RDWR, 0);
  ASSERT_EQ(ftruncate(fd, 8 << 20), 0);
  close(fd);
  std::string o = attach_outcome(name_);
  EXPECT_REFUSED(o, "device memory but that object is 4096 bytes");
}

// Random values in every header word attach reads, one word at a time and several at once: each
// attach ends in a ConfigError or a pool, within the alarm, without a signal.
TEST_F(HostilePool, RandomHeaderWordsNeverCrashOrHang) {
  std::mt19937_64 rng(39);
  const uint64_t words[] = {layout::kMagicOffset,       layout::kVersionOffset,
                            layout::kRegionBytesOffset, layout::kNodeInfoOffset,
                            layout::kNodeCountOffset,   layout::kMailboxGeomOffset,
                            layout::kSlotBytesOffset,   layout::kDeviceMemoryBytesOffset};
  auto value = [&](uint64_t old) -> uint64_t {
    switch (rng() % 6) {
      case 0:
        return rng();
      case 1:
        return rng() & 0xffff;
      case 2:
        return old ^ (uint64_t{1} << (rng() % 64));
      case 3:
        return old + (rng() % 5) - 2;
      case 4:
        return uint64_t{1} << (rng() % 64);
      default:
        return ~uint64_t{0} - (rng() % 3);
    }
  };
  std::vector<std::byte> saved0(64 * 8), saved1(64 * 8);
  for (int round = 0; round < 300; ++round) {
    local::read(header(0), saved0.data(), saved0.size());
    local::read(header(1), saved1.data(), saved1.size());
    const int changes = 1 + int(rng() % 3);
    std::string what;
    for (int k = 0; k < changes; ++k) {
      NodeId n = NodeId(rng() % 2);
      uint64_t off = words[rng() % std::size(words)];
      uint64_t v = value(get(n, off));
      if (n == 0 && off == layout::kMagicOffset && (rng() % 4)) continue;  // mostly keep node 0
      set(n, off, v);
      what += " node " + std::to_string(n) + " @" + std::to_string(off) + "=" + std::to_string(v);
    }
    std::string o = attach_outcome(name_);
    EXPECT_EQ(o.find("child"), std::string::npos) << "round " << round << ":" << what << ": " << o;
    for (size_t i = 0; i < saved0.size(); i += 8) {
      uint64_t w0, w1;
      std::memcpy(&w0, saved0.data() + i, 8);
      std::memcpy(&w1, saved1.data() + i, 8);
      set(0, i, w0);
      set(1, i, w1);
    }
  }
  EXPECT_EQ(attach_outcome(name_), "ok");
}

// --- mailbox rings --------------------------------------------------------------------------

struct Ring {
  MailboxGeometry g{2, 8, 256};
  std::vector<uint64_t> mem;
  std::byte* base;
  Ring() : mem(g.bytes_per_mailbox() / 8), base(reinterpret_cast<std::byte*>(mem.data())) {
    MailboxRing::format(base, g);
  }
  MailboxRing ring() { return MailboxRing(base, g); }
  std::byte* seq(uint64_t pos) {
    return base + MailboxRing::kSlotsOffset + (pos & (g.slots - 1)) * g.slot_bytes;
  }
};

// Push/pop round trips through every slot: the ring has all its slots and delivers in order.
void expect_whole(Ring& r) {
  const std::byte hi[2] = {std::byte{'h'}, std::byte{'i'}};
  for (int lap = 0; lap < 3; ++lap) {
    for (uint32_t i = 0; i < r.g.slots; ++i)
      ASSERT_TRUE(r.ring().try_push({0, 1, 5, i}, hi)) << "slot " << i << " lost";
    EXPECT_FALSE(r.ring().try_push({0, 1, 5, 99}, hi));
    for (uint32_t i = 0; i < r.g.slots; ++i) {
      Message m;
      ASSERT_TRUE(r.ring().try_pop(m));
      EXPECT_EQ(m.request_id, i);
    }
    Message m;
    EXPECT_FALSE(r.ring().try_pop(m));
  }
}

// One 8-byte write of a sequence word sent try_pop (and try_push) into an endless spin. Now the
// slot is dropped with a TransportError that the caller counts, and the ring keeps its slots,
// once the word has stayed 200 ms (before that it may be a remote write seen half done).
TEST(HostileMailbox, BogusSequenceWordIsCountedAndDropped) {
  for (uint64_t bogus : {uint64_t{1} << 40, uint64_t{5}, ~uint64_t{0}, uint64_t{1} << 63}) {
    std::string fate = in_child([bogus] {
      Ring r;
      const std::byte hi[2] = {std::byte{'h'}, std::byte{'i'}};
      // Head and tail at 3: the ring has been used.
      for (uint32_t i = 0; i < 3; ++i) {
        Message m;
        if (!r.ring().try_push({0, 1, 5, i}, hi) || !r.ring().try_pop(m)) _exit(10);
      }
      // A free slot's word (no producer has claimed position 3 yet).
      local::store_word(r.seq(3), bogus);
      if (r.ring().try_push({0, 1, 5, 7}, hi)) _exit(11);  // reported full, not a spin
      const uint64_t before = MailboxRing::malformed();
      Message m;
      // First taken for a write in flight (a remote producer's half-copied word): not ready.
      if (r.ring().try_pop(m)) _exit(19);
      std::this_thread::sleep_for(std::chrono::milliseconds(250));  // past kBogusAfter
      try {
        r.ring().try_pop(m);
        _exit(12);
      } catch (const TransportError& e) {
        if (!std::strstr(e.what(), "malformed message in mailbox")) _exit(13);
      }
      if (MailboxRing::malformed() != before + 1) _exit(14);
      // A published message's word overwritten: the message is dropped, its slot kept.
      if (!r.ring().try_push({0, 1, 5, 8}, hi)) _exit(15);
      local::store_word(r.seq(3), bogus);
      if (r.ring().try_pop(m)) _exit(20);
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      try {
        r.ring().try_pop(m);
        _exit(16);
      } catch (const TransportError&) {
      }
      if (r.ring().try_pop(m)) _exit(17);
      expect_whole(r);
      if (::testing::Test::HasFailure()) _exit(18);
    });
    EXPECT_EQ(fate, "") << "bogus sequence word " << bogus;
  }
}

// Random words over a whole ring (head, tail, every sequence word and header): every call returns
// within the alarm, and a ring that is formatted again works.
TEST(HostileMailbox, RandomRingWordsNeverHang) {
  std::string fate = in_child([] {
    std::mt19937_64 rng(7);
    const std::byte hi[2] = {std::byte{'h'}, std::byte{'i'}};
    for (int round = 0; round < 2000; ++round) {
      Ring r;
      for (size_t i = 0; i < r.mem.size(); ++i)
        if (rng() % 3 == 0) r.mem[i] = (rng() % 2) ? rng() : rng() % 32;
      for (int k = 0; k < 20; ++k) {
        Message m;
        try {
          r.ring().try_pop(m);
          r.ring().try_push({0, 1, 5, 1}, hi);
        } catch (const TransportError&) {
        }
      }
    }
  });
  EXPECT_EQ(fate, "");
}

// dmrt-node holding a pool whose inbox has a bogus sequence word stays responsive: it drops the
// slot, counts it, and stops on SIGTERM. A node-count word of 65536 makes it refuse the pool,
// at once, with the reason. DMRT_NODE names the binary.
std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t spawn_node(const std::string& pool, const std::string& log) {
  const char* bin = std::getenv("DMRT_NODE");
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (!f || dup2(fileno(stdout), 2) < 0) _exit(120);
    execl(bin, bin, "--transport", "shm", "--pool", pool.c_str(), "--node", "0", nullptr);
    _exit(121);
  }
  return pid;
}

// Exit status once `pid` exits, or -1 after `seconds` (then it is killed).
int wait_exit(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// Once with each signal the node stops on (the probe found it deaf to both), on the same pool.
TEST_F(HostilePool, NodeProgramSurvivesABogusSequenceWordAndStops) {
  if (!std::getenv("DMRT_NODE")) GTEST_SKIP() << "set DMRT_NODE to the dmrt-node binary";
  const MailboxGeometry& g = pool_->config().mailbox;
  std::byte* inbox = header(0) + layout::mailbox_offset(g, 0);
  for (int sig : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(sig == SIGTERM ? "SIGTERM" : "SIGINT");
    std::string log = "/tmp/dmrt-hostile-node-" + std::to_string(getpid()) + ".log";
    const uint64_t beat = get(0, layout::kHeartbeatOffset);
    pid_t node = spawn_node(name_, log);
    ASSERT_GT(node, 0);
    // Wait until it serves (its heartbeat word moves), then poison the inbox's next slot.
    for (int i = 0; i < 3000 && get(0, layout::kHeartbeatOffset) == beat; ++i) usleep(10000);
    ASSERT_NE(get(0, layout::kHeartbeatOffset), beat) << read_file(log);
    const uint64_t head = local::load_word(inbox + MailboxRing::kHeadOffset);
    local::store_word(inbox + MailboxRing::kSlotsOffset + (head & (g.slots - 1)) * g.slot_bytes,
                      uint64_t{1} << 40);
    usleep(300000);
    // The inbox works again: a message pushed now is taken by the node.
    const std::byte hi[2] = {std::byte{'h'}, std::byte{'i'}};
    EXPECT_TRUE(MailboxRing(inbox, g).try_push({0, 1, 0, 1}, hi));
    bool taken = false;
    for (int i = 0; i < 500 && !taken; ++i) {
      taken = local::load_word(inbox + MailboxRing::kHeadOffset) == head + 1;
      usleep(10000);
    }
    EXPECT_TRUE(taken) << "the node no longer takes messages from its inbox";
    kill(node, sig);
    EXPECT_EQ(wait_exit(node, 20), 0) << "dmrt-node did not stop on the signal\n" << read_file(log);
    std::string text = read_file(log);
    EXPECT_NE(text.find("malformed message in mailbox"), std::string::npos) << text;
    std::remove(log.c_str());
  }
}

TEST_F(HostilePool, NodeProgramRefusesACorruptHeader) {
  if (!std::getenv("DMRT_NODE")) GTEST_SKIP() << "set DMRT_NODE to the dmrt-node binary";
  std::string log = "/tmp/dmrt-hostile-node-" + std::to_string(getpid()) + "-hdr.log";
  set(0, layout::kNodeCountOffset, 65536);
  pid_t node = spawn_node(name_, log);
  ASSERT_GT(node, 0);
  int rc = wait_exit(node, 20);
  set(0, layout::kNodeCountOffset, 2);
  EXPECT_NE(rc, 0);
  EXPECT_NE(rc, -1) << "dmrt-node hung on a node count of 65536\n" << read_file(log);
  EXPECT_NE(read_file(log).find("65536 nodes"), std::string::npos) << read_file(log);
  std::remove(log.c_str());
}

// /dev/shm smaller than the pool (a default container's 64 MiB): refused at creation with the
// size and the filesystem, where it used to be a SIGBUS in the first process to touch the
// missing pages. Needs root for a private mount namespace; skipped otherwise.
TEST(HostilePoolSpace, PoolLargerThanDevShmIsRefusedAtCreate) {
  std::string fate = in_child(
      [] {
        if (unshare(CLONE_NEWNS) != 0) _exit(77);
        if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(77);
        if (mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=64m") != 0) _exit(77);
        try {
          auto p = shm::Pool::create(
              ClusterConfig::embedded(1, 1, uint64_t{1024} << 20, uint64_t{8} << 20), "toobig");
          _exit(20);
        } catch (const ConfigError& e) {
          const std::string t = e.what();
          if (t.find("/dev/shm") == std::string::npos ||
              t.find("free of 64 MiB") == std::string::npos || t.find("needs") == std::string::npos)
            _exit(21);
        }
        // Smaller than the filesystem, but larger than what another pool left of it.
        auto fill = shm::Pool::create(
            ClusterConfig::embedded(1, 1, uint64_t{40} << 20, uint64_t{4} << 20), "fill");
        try {
          auto p = shm::Pool::create(
              ClusterConfig::embedded(1, 1, uint64_t{32} << 20, uint64_t{4} << 20), "second");
          _exit(22);
        } catch (const ConfigError& e) {
          if (std::string(e.what()).find("/dev/shm") == std::string::npos) _exit(23);
        }
        // Nothing of the refused pools is left behind.
        if (access("/dev/shm/dmrt.toobig.0", F_OK) == 0 ||
            access("/dev/shm/dmrt.second.0", F_OK) == 0)
          _exit(24);
        // A pool that fits works.
        auto ok = shm::Pool::create(
            ClusterConfig::embedded(1, 1, uint64_t{8} << 20, uint64_t{4} << 20), "fits");
      },
      60);
  if (fate == "exit 77") GTEST_SKIP() << "needs root (unshare -m and a tmpfs mount)";
  EXPECT_EQ(fate, "");
}

}  // namespace
}  // namespace dmrt
