// dmrt-bench's local peer `absl-hash` (256 absl::flat_hash_map submaps, bench/peers/absl_hash.h),
// registered for every transport compiled in.
#include "bench/peers/absl_hash.h"
#include "bench/indexes/register.h"

namespace dmrt::bench {
namespace {

const RegisterPeer<AbslHashIndex, AbslHashHandle> kAbslHash{
    {"absl-hash", "",
     "local peer: 256 absl::flat_hash_map submaps with a lock each in this process (phmap's "
     "parallel_flat_hash_map design; no verbs, no scans)",
     120}};

}  // namespace
}  // namespace dmrt::bench
