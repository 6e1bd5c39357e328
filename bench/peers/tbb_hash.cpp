// dmrt-bench's local peer `tbb-hash` (tbb::concurrent_hash_map, bench/peers/tbb_hash.h), registered
// for every transport compiled in.
#include "bench/peers/tbb_hash.h"
#include "bench/indexes/register.h"

namespace dmrt::bench {
namespace {

const RegisterPeer<TbbHashIndex, TbbHashHandle> kTbbHash{
    {"tbb-hash", "", "local peer: tbb::concurrent_hash_map in this process (no verbs, no scans)",
     110}};

}  // namespace
}  // namespace dmrt::bench
