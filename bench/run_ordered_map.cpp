// dmrt-bench's local peer `ordered-map` (bench/peer_ordered_map.h) on every transport compiled in.
#include "bench/entries.h"
#include "bench/peer_ordered_map.h"
#include "bench/run_index.h"

namespace dmrt::bench {

int run_ordered_map(const RunRequest& r) {
  return run_transports<LocalPeer<OrderedMapIndex, OrderedMapHandle>>(r, NoFlags{});
}

bool byte_keys_ordered_map() {
  return takes_byte_keys<LocalPeer<OrderedMapIndex, OrderedMapHandle>>();
}

}  // namespace dmrt::bench
