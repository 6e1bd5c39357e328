// dmrt-bench's driver on the sim transport, compiled once for every index (each index reaches it
// through bench/driver/bench_index.h from its own bench/indexes/NAME.cpp).
#include "bench/driver/runner.h"
#include "bench/driver/transports.h"
#include "policies/sim/transport.h"

namespace dmrt::bench {

template int run_bench<SimTransport>(const RunRequest&, const IndexMaker<SimTransport>&);

}  // namespace dmrt::bench
