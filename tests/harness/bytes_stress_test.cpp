// The byte-key stress suite (tests/harness/bytes_suites.h) on the reference bytes index: threads x
// fibers on shm, checked for linearizability (with scans), at key_size 32 and 256.
#include <gtest/gtest.h>

#include "tests/harness/bytes_suites.h"
#include "tests/harness/reference_bytes_index.h"
#include "tests/runtime/test_cluster.h"

namespace dmrt::harness {
namespace {

TEST(HarnessBytesStress, ReferenceIsLinearizableWithByteKeys) {
  for (size_t key_size : {size_t{32}, size_t{256}}) {
    auto pool = testing::small_pool(1, 1, uint64_t{256} << 20);
    auto setup = testing::make_client(pool, 1000);
    auto idx = ReferenceBytesIndex<ShmTransport>::create(setup, 1024, key_size);
    StressOptions o;
    o.keys = 200;
    o.threads = 2;
    o.fibers = 8;
    o.ops_per_worker = 1500;
    o.seed = key_size;
    auto out = byte_key_stress_test(
        pool, [&](ShmClient& c) { return idx->handle(c); }, key_size, o);
    EXPECT_GT(out.result.scans_checked, 0u);
  }
}

}  // namespace
}  // namespace dmrt::harness
