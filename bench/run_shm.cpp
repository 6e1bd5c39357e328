// dmrt-bench's driver on the shm transport, compiled once for every index (each index reaches it
// through bench/bench_index.h from its own bench/run_NAME.cpp).
#include "bench/runner.h"
#include "bench/transports.h"
#include "policies/shm/transport.h"

namespace dmrt::bench {

template int run_bench<ShmTransport>(const RunRequest&, const IndexMaker<ShmTransport>&);

}  // namespace dmrt::bench
