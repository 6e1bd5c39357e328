// dmrt-bench's HStore: DmAdapter over HStoreRun (bench/run_hstore.h), instantiated for every
// transport compiled in.
#include "bench/run_hstore.h"
#include "bench/entries.h"
#include "bench/run_index.h"

namespace dmrt::bench {

int run_hstore(const RunRequest& r, const FlagResolver<hstore::Options>& f) {
  return run_dm<HStoreRun>(r, f);
}

bool byte_keys_hstore() {
  return takes_byte_keys<DmAdapterFor<HStoreRun>>();
}

}  // namespace dmrt::bench
