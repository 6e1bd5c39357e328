// dmrt-bench's SMART: the generic adapter over the trees' run spec (bench/dm_adapter.h),
// instantiated for every transport compiled in.
#include "bench/dm_adapter.h"
#include "bench/entries.h"
#include "bench/run_index.h"
#include "indexes/smart/prebuilt.h"

namespace dmrt::bench {

int run_smart(const RunRequest& r, const FlagResolver<smart::Options>& f) {
  return run_dm<TreeRun<smart::Options, smart::Index>>(r, f);
}

bool byte_keys_smart() {
  return takes_byte_keys<DmAdapterFor<TreeRun<smart::Options, smart::Index>>>();
}

}  // namespace dmrt::bench
