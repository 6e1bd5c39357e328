// dmrt-bench's RACE: how the bench runs it (DmAdapter's run spec, bench/dm_adapter.h),
// instantiated for every transport compiled in.
#include "bench/dm_adapter.h"
#include "bench/entries.h"
#include "bench/run_index.h"
#include "indexes/race/prebuilt.h"

namespace dmrt::bench {

struct RaceRun {
  using Options = race::Options;
  template <Transport T>
  using Index = race::Index<T>;
  static constexpr bool kPerComputeNode = false;  // its directory cache is per handle

  template <Transport T>
  static race::Options options(race::Options o, const IndexOptions& io) {
    o.value_size = static_cast<decltype(o.value_size)>(io.value_size);
    o.expected_keys = io.expected_keys;  // pre-sizes the directory
    return o;
  }
};

int run_race(const RunRequest& r, const FlagResolver<race::Options>& f) {
  return run_dm<RaceRun>(r, f);
}

bool byte_keys_race() {
  return takes_byte_keys<DmAdapterFor<RaceRun>>();
}

}  // namespace dmrt::bench
