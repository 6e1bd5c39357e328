// dmrt-bench on the sim transport: the driver instantiated for every index in virtual time.
#include "bench/run_impl.h"
#include "bench/transports.h"
#include "policies/sim/transport.h"

namespace dmrt::bench {

int run_sim(const Options& opt, const ClusterConfig& config, const Mix& mix,
            const IndexFlags& flags) {
  return run_on<SimTransport>(opt, config, mix, flags);
}

}  // namespace dmrt::bench
