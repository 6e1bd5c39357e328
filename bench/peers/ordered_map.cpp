// dmrt-bench's local peer `ordered-map` (std::map shards, bench/peers/ordered_map.h), registered
// for every transport compiled in.
#include "bench/peers/ordered_map.h"
#include "bench/indexes/register.h"

namespace dmrt::bench {
namespace {

const RegisterPeer<OrderedMapIndex, OrderedMapHandle> kOrderedMap{
    {"ordered-map", "",
     "local peer: 256 key-range shards of std::map + shared_mutex in this process (scans)", 130}};

}  // namespace
}  // namespace dmrt::bench
