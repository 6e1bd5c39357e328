// dmrt-bench's driver on the verbs transport, compiled once for every index (each index reaches it
// through bench/bench_index.h from its own bench/run_NAME.cpp).
#include "bench/env_verbs.h"
#include "bench/runner.h"
#include "bench/transports.h"
#include "policies/verbs/transport.h"

namespace dmrt::bench {

template int run_bench<VerbsTransport>(const RunRequest&, const IndexMaker<VerbsTransport>&);

}  // namespace dmrt::bench
