// dmrt-bench's CHIME: the generic adapter over the trees' run spec (bench/dm_adapter.h),
// instantiated for every transport compiled in.
#include "bench/dm_adapter.h"
#include "bench/entries.h"
#include "bench/run_index.h"
#include "indexes/chime/prebuilt.h"

namespace dmrt::bench {

int run_chime(const RunRequest& r, const FlagResolver<chime::Options>& f) {
  return run_dm<TreeRun<chime::Options, chime::Index>>(r, f);
}

bool byte_keys_chime() {
  return takes_byte_keys<DmAdapterFor<TreeRun<chime::Options, chime::Index>>>();
}

}  // namespace dmrt::bench
