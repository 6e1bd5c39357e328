// dmrt-bench's driver on the shm transport, compiled once for every index (each index reaches it
// through bench/driver/bench_index.h from its own bench/indexes/NAME.cpp).
#include "bench/driver/runner.h"
#include "bench/driver/transports.h"
#include "policies/shm/transport.h"

namespace dmrt::bench {

template int run_bench<ShmTransport>(const RunRequest&, const IndexMaker<ShmTransport>&);

}  // namespace dmrt::bench
