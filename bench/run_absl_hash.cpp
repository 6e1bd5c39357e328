// dmrt-bench's local peer `absl-hash` (bench/peer_absl_hash.h) on every transport compiled in.
#include "bench/entries.h"
#include "bench/peer_absl_hash.h"
#include "bench/run_index.h"

namespace dmrt::bench {

int run_absl_hash(const RunRequest& r) {
  return run_transports<LocalPeer<AbslHashIndex, AbslHashHandle>>(r, NoFlags{});
}

bool byte_keys_absl_hash() {
  return takes_byte_keys<LocalPeer<AbslHashIndex, AbslHashHandle>>();
}

}  // namespace dmrt::bench
