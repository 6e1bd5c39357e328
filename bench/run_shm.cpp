// dmrt-bench on the shm transport: the driver instantiated for every index over shared memory.
#include "bench/run_impl.h"
#include "bench/transports.h"
#include "policies/shm/transport.h"

namespace dmrt::bench {

int run_shm(const Options& opt, const ClusterConfig& config, const Mix& mix,
            const IndexFlags& flags) {
  return run_on<ShmTransport>(opt, config, mix, flags);
}

}  // namespace dmrt::bench
