// dmrt-bench's Sherman: how the bench runs it (DmAdapter's run spec, bench/dm_adapter.h),
// instantiated for every transport compiled in.
#include "bench/dm_adapter.h"
#include "bench/entries.h"
#include "bench/run_index.h"
#include "indexes/sherman/tree.h"

namespace dmrt::bench {

struct ShermanRun {
  using Options = sherman::Options;
  template <Transport T>
  using Index = sherman::Index<T>;
  // Its internal-node cache and local lock table belong to a compute node.
  static constexpr bool kPerComputeNode = true;

  template <Transport T>
  static sherman::Options options(sherman::Options o, const IndexOptions& io) {
    return tree_options(o, io);
  }
};

template <Transport T>
using ShermanAdapter = DmAdapter<ShermanRun, T>;

int run_sherman(const RunRequest& r, const FlagResolver<sherman::Options>& f) {
  return run_transports<ShermanAdapter>(r, f);
}

}  // namespace dmrt::bench
