// dmrt-bench's local peer `tbb-map` (bench/peer_tbb_map.h) on every transport compiled in.
#include "bench/entries.h"
#include "bench/peer_tbb_map.h"
#include "bench/run_index.h"

namespace dmrt::bench {

int run_tbb_map(const RunRequest& r) {
  return run_transports<LocalPeer<TbbMapIndex, TbbMapHandle>>(r, NoFlags{});
}

bool byte_keys_tbb_map() {
  return takes_byte_keys<LocalPeer<TbbMapIndex, TbbMapHandle>>();
}

}  // namespace dmrt::bench
