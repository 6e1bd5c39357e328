// dmrt-bench's ROLEX: DmAdapter over RolexRun (bench/run_rolex.h), instantiated for every
// transport compiled in.
#include "bench/run_rolex.h"
#include "bench/entries.h"
#include "bench/run_index.h"

namespace dmrt::bench {

int run_rolex(const RunRequest& r, const FlagResolver<rolex::Options>& f) {
  return run_dm<RolexRun>(r, f);
}

bool byte_keys_rolex() {
  return takes_byte_keys<DmAdapterFor<RolexRun>>();
}

}  // namespace dmrt::bench
