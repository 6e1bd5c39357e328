// dmrt-bench's driver on the verbs transport, compiled once for every index (each index reaches it
// through bench/driver/bench_index.h from its own bench/indexes/NAME.cpp).
#include "bench/driver/env_verbs.h"
#include "bench/driver/runner.h"
#include "bench/driver/transports.h"
#include "policies/verbs/transport.h"

namespace dmrt::bench {

template int run_bench<VerbsTransport>(const RunRequest&, const IndexMaker<VerbsTransport>&);

}  // namespace dmrt::bench
