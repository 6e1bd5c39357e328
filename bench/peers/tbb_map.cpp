// dmrt-bench's local peer `tbb-map` (tbb::concurrent_map, bench/peers/tbb_map.h), registered for
// every transport compiled in.
#include "bench/peers/tbb_map.h"
#include "bench/indexes/register.h"

namespace dmrt::bench {
namespace {

const RegisterPeer<TbbMapIndex, TbbMapHandle> kTbbMap{
    {"tbb-map", "",
     "local peer: tbb::concurrent_map (skip list) in this process, a spinlock per value, "
     "deletes as tombstones (scans)",
     140}};

}  // namespace
}  // namespace dmrt::bench
