// dmrt-bench's Sherman: the generic adapter over the trees' run spec (bench/dm_adapter.h),
// instantiated for every transport compiled in.
#include "bench/dm_adapter.h"
#include "bench/entries.h"
#include "bench/run_index.h"
#include "indexes/sherman/prebuilt.h"

namespace dmrt::bench {

int run_sherman(const RunRequest& r, const FlagResolver<sherman::Options>& f) {
  return run_dm<TreeRun<sherman::Options, sherman::Index>>(r, f);
}

bool byte_keys_sherman() {
  return takes_byte_keys<DmAdapterFor<TreeRun<sherman::Options, sherman::Index>>>();
}

}  // namespace dmrt::bench
