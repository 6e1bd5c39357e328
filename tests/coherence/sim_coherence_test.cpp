// sim's coherence model (dmrt/policies/sim/coherence.h): stale cached lines, writes invisible
// until written back, atomics and lock words at memory, the coherent region of `partial`, the
// flushes' count and cost, and a default (coherent) run that hints do not change.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "dmrt/policies/sim/cluster.h"
#include "tests/sim/small_cluster.h"

namespace dmrt::sim {
namespace {

constexpr FlushHint kInval = FlushHint::kInvalidate;
constexpr FlushHint kBack = FlushHint::kWriteBack;

struct Model {
  explicit Model(Coherence c, uint64_t coherent_bytes = 0) : cluster(options(c, coherent_bytes)) {
    a = cluster.compute_nodes()[0];
    b = cluster.compute_nodes()[1];
    mem = cluster.memory_nodes()[0];
  }
  static Options options(Coherence c, uint64_t coherent_bytes) {
    Options o = small_test_cluster(2, 1);
    o.coherence = c;
    o.coherent_bytes = coherent_bytes;
    return o;
  }
  // Runs f on one client of `node`, in virtual time; returns the virtual time it took (ps).
  uint64_t on(NodeId node, const std::function<void(SimClient&)>& f) {
    const uint64_t start = cluster.core()->now_ps();
    cluster.run_fibers(1, [&](const WorkerInfo&) {
      SimClient c(cluster.endpoint(node, 0));
      f(c);
    });
    return cluster.core()->now_ps() - start;
  }
  uint64_t read(NodeId node, GlobalAddress at, FlushHint h = FlushHint::kNone) {
    uint64_t v = 0;
    on(node, [&](SimClient& c) { c.read(at, &v, 8, h); });
    return v;
  }
  void write(NodeId node, GlobalAddress at, uint64_t v, FlushHint h = FlushHint::kNone) {
    on(node, [&](SimClient& c) { c.write(at, &v, 8, h); });
  }
  // What memory holds, seen from outside the model (an untimed read bypasses the caches).
  uint64_t memory(GlobalAddress at) {
    SimClient c(cluster.endpoint(a, 9));
    return c.read_value<uint64_t>(at);
  }
  GlobalAddress word(uint64_t i) const { return {mem, (uint64_t{128} << 20) + 8 * i}; }

  Cluster cluster;
  NodeId a = 0, b = 0, mem = 0;
};

TEST(SimCoherence, NamesParseAndValidate) {
  EXPECT_EQ(parse_coherence("none"), Coherence::kNone);
  EXPECT_EQ(parse_coherence("partial"), Coherence::kPartial);
  EXPECT_EQ(parse_coherence("coherent"), Coherence::kCoherent);
  EXPECT_THROW(parse_coherence("mesi"), ConfigError);
  Options o;
  o.coherent_bytes = 64;  // only with partial
  EXPECT_THROW(o.validate(), ConfigError);
  o.coherence = Coherence::kPartial;
  EXPECT_NO_THROW(o.validate());
  EXPECT_EQ(Options{}.describe().find("coherence"), std::string::npos);
}

TEST(SimCoherence, ACachedLineIsStaleUntilInvalidated) {
  Model m(Coherence::kNone);
  const GlobalAddress x = m.word(0);
  EXPECT_EQ(m.read(m.a, x), 0u);  // a caches the line
  m.write(m.b, x, 7, kBack);      // b's write reaches memory
  EXPECT_EQ(m.memory(x), 7u);
  EXPECT_EQ(m.read(m.a, x), 0u);  // a's copy is stale
  EXPECT_EQ(m.cluster.report().coherence_counts.stale_lines, 1u);
  EXPECT_EQ(m.read(m.a, x, kInval), 7u);
  EXPECT_EQ(m.read(m.a, x), 7u);  // and cached again, fresh
}

TEST(SimCoherence, AWriteIsInvisibleUntilWrittenBack) {
  Model m(Coherence::kNone);
  const GlobalAddress x = m.word(0), y = m.word(1);  // one line
  m.write(m.a, x, 5);
  EXPECT_EQ(m.read(m.a, x), 5u);  // the writer sees its own store
  EXPECT_EQ(m.memory(x), 0u);
  EXPECT_EQ(m.read(m.b, x, kInval), 0u);  // no other host does
  // A later write-back of the line, by another verb, takes every dirty byte of it along.
  m.write(m.a, y, 6, kBack);
  EXPECT_EQ(m.memory(x), 5u);
  EXPECT_EQ(m.memory(y), 6u);
  EXPECT_EQ(m.read(m.b, x, kInval), 5u);
}

TEST(SimCoherence, WriteBackWritesOnlyTheBytesTheHostStored) {
  Model m(Coherence::kNone);
  const GlobalAddress x = m.word(0), y = m.word(1);
  EXPECT_EQ(m.read(m.a, y), 0u);  // a holds the line with y = 0
  m.write(m.b, y, 9, kBack);
  m.write(m.a, x, 1, kBack);  // a's stale y is not written back over b's
  EXPECT_EQ(m.memory(y), 9u);
  EXPECT_EQ(m.memory(x), 1u);
}

TEST(SimCoherence, AtomicsActAtMemoryAndLeaveCachedCopiesStale) {
  Model m(Coherence::kNone);
  const GlobalAddress x = m.word(0);
  EXPECT_EQ(m.read(m.a, x), 0u);
  uint64_t old = 1;
  m.on(m.b, [&](SimClient& c) { old = c.cas(x, 0, 3); });
  EXPECT_EQ(old, 0u);
  m.on(m.b, [&](SimClient& c) { old = c.faa(x, 2); });
  EXPECT_EQ(old, 3u);
  EXPECT_EQ(m.memory(x), 5u);
  EXPECT_EQ(m.read(m.a, x), 0u);
  EXPECT_EQ(m.read(m.a, x, kInval), 5u);
}

TEST(SimCoherence, AReleaseLandsItsLockWordAtMemory) {
  Model m(Coherence::kNone);
  const GlobalAddress data = m.word(0), lock = m.word(1);
  m.on(m.a, [&](SimClient& c) { EXPECT_EQ(c.cas(lock, 0, 1), 0u); });
  const uint64_t img[2] = {42, 0};
  m.on(m.a, [&](SimClient& c) { c.release(data, img, 16); });
  EXPECT_EQ(m.memory(lock), 0u);  // unlocked for every host
  EXPECT_EQ(m.memory(data), 0u);  // but the data is still in a's cache
  m.on(m.a, [&](SimClient& c) { c.release(data, img, 16, LockWord::kLast, kBack); });
  EXPECT_EQ(m.memory(data), 42u);
}

TEST(SimCoherence, PartialKeepsItsRegionOfDeviceMemoryCoherent) {
  Model m(Coherence::kPartial, 64);
  const GlobalAddress in = GlobalAddress::device(m.mem, 0), out = GlobalAddress::device(m.mem, 64);
  EXPECT_EQ(m.read(m.a, in), 0u);
  EXPECT_EQ(m.read(m.a, out), 0u);
  m.write(m.b, in, 1);  // no hint: coherent all the same
  m.write(m.b, out, 2, kBack);
  EXPECT_EQ(m.read(m.a, in), 1u);
  EXPECT_EQ(m.read(m.a, out), 0u);  // past the region: cached, stale
  // No flush is counted inside the region.
  const auto before = m.cluster.report().coherence_counts;
  m.write(m.b, in, 3, kBack);
  EXPECT_EQ(m.cluster.report().coherence_counts.lines_written_back, before.lines_written_back);
}

TEST(SimCoherence, FlushesAreCountedPerLineAndChargedAsCpu) {
  Model m(Coherence::kNone);
  uint64_t buf[24] = {};
  const GlobalAddress at = m.word(4);  // 32 B into a line: 192 B span 4 lines
  const uint64_t plain = m.on(m.a, [&](SimClient& c) { c.read(at, buf, 192); });
  const uint64_t flushed = m.on(m.a, [&](SimClient& c) { c.read(at, buf, 192, kInval); });
  EXPECT_EQ(flushed - plain, 4 * m.cluster.options().flush_line_ns * 1000);
  m.on(m.a, [&](SimClient& c) {
    Batch b;
    b.write(at, buf, 64).hint(kBack).read(at, buf, 8).hint(kInval);
    c.run(b);
  });
  const CoherenceCounters n = m.cluster.report().coherence_counts;
  EXPECT_EQ(n.lines_invalidated, 4u + 1u);
  EXPECT_EQ(n.lines_written_back, 2u);
  EXPECT_EQ(n.flush_ps, 7 * m.cluster.options().flush_line_ns * 1000);
}

// The default model ignores hints: the same verbs take the same virtual time with and without.
TEST(SimCoherence, CoherentIgnoresHints) {
  Model m(Coherence::kCoherent);
  uint64_t buf[8] = {};
  const uint64_t plain = m.on(m.a, [&](SimClient& c) { c.read(m.word(0), buf, 64); });
  const uint64_t hinted = m.on(m.a, [&](SimClient& c) { c.read(m.word(0), buf, 64, kInval); });
  EXPECT_EQ(plain, hinted);
  m.write(m.a, m.word(0), 4);
  EXPECT_EQ(m.read(m.b, m.word(0)), 4u);
  EXPECT_EQ(m.cluster.report().coherence, Coherence::kCoherent);
  EXPECT_EQ(m.cluster.report().describe().find("coherence"), std::string::npos);
}

TEST(SimCoherence, TheWatchdogStopsAClientThatNeverFinishes) {
  Options o = small_test_cluster(1, 1);
  o.watchdog_ns = 100'000;
  Cluster cluster(o);
  const GlobalAddress x{cluster.memory_nodes()[0], uint64_t{128} << 20};
  EXPECT_THROW(cluster.run([&](SimClient& c, const WorkerInfo&) {
    while (c.read_value<uint64_t>(x) == 0) {
    }
  }),
               WorkerFailure);
  EXPECT_GT(cluster.now_ns(), 100'000u);
}

}  // namespace
}  // namespace dmrt::sim
