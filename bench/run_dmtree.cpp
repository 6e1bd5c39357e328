// dmrt-bench's DMTree: the generic adapter over the trees' run spec (bench/dm_adapter.h),
// instantiated for every transport compiled in.
#include "bench/dm_adapter.h"
#include "bench/entries.h"
#include "bench/run_index.h"
#include "indexes/dmtree/prebuilt.h"

namespace dmrt::bench {

int run_dmtree(const RunRequest& r, const FlagResolver<dmtree::Options>& f) {
  return run_dm<TreeRun<dmtree::Options, dmtree::Index>>(r, f);
}

bool byte_keys_dmtree() {
  return takes_byte_keys<DmAdapterFor<TreeRun<dmtree::Options, dmtree::Index>>>();
}

}  // namespace dmrt::bench
