// dmrt-bench on the verbs transport: the driver instantiated for every index over real RDMA.
#include "bench/env_verbs.h"
#include "bench/run_impl.h"
#include "bench/transports.h"
#include "policies/verbs/transport.h"

namespace dmrt::bench {

int run_verbs(const Options& opt, const ClusterConfig& config, const Mix& mix,
              const IndexFlags& flags) {
  return run_on<VerbsTransport>(opt, config, mix, flags);
}

}  // namespace dmrt::bench
