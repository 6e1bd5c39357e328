// dmrt-bench's CHIME: how the bench runs it (DmAdapter's run spec, bench/dm_adapter.h),
// instantiated for every transport compiled in.
#include "bench/dm_adapter.h"
#include "bench/entries.h"
#include "bench/run_index.h"
#include "indexes/chime/tree.h"

namespace dmrt::bench {

struct ChimeRun {
  using Options = chime::Options;
  template <Transport T>
  using Index = chime::Index<T>;
  // Its internal-node cache and hotspot buffer belong to a compute node.
  static constexpr bool kPerComputeNode = true;

  template <Transport T>
  static chime::Options options(chime::Options o, const IndexOptions& io) {
    return tree_options(o, io);
  }
};

template <Transport T>
using ChimeAdapter = DmAdapter<ChimeRun, T>;

int run_chime(const RunRequest& r, const FlagResolver<chime::Options>& f) {
  return run_transports<ChimeAdapter>(r, f);
}

}  // namespace dmrt::bench
