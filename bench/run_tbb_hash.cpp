// dmrt-bench's local peer `tbb-hash` (bench/peer_tbb_hash.h) on every transport compiled in.
#include "bench/entries.h"
#include "bench/peer_tbb_hash.h"
#include "bench/run_index.h"

namespace dmrt::bench {

int run_tbb_hash(const RunRequest& r) {
  return run_transports<LocalPeer<TbbHashIndex, TbbHashHandle>>(r, NoFlags{});
}

bool byte_keys_tbb_hash() {
  return takes_byte_keys<LocalPeer<TbbHashIndex, TbbHashHandle>>();
}

}  // namespace dmrt::bench
