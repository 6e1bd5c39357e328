// dmrt-bench's driver on the sim transport, compiled once for every index (each index reaches it
// through bench/bench_index.h from its own bench/run_NAME.cpp).
#include "bench/runner.h"
#include "bench/transports.h"
#include "policies/sim/transport.h"

namespace dmrt::bench {

template int run_bench<SimTransport>(const RunRequest&, const IndexMaker<SimTransport>&);

}  // namespace dmrt::bench
