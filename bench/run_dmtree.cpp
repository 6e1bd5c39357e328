// dmrt-bench's DMTree: how the bench runs it (DmAdapter's run spec, bench/dm_adapter.h),
// instantiated for every transport compiled in.
#include "bench/dm_adapter.h"
#include "bench/entries.h"
#include "bench/run_index.h"
#include "indexes/dmtree/tree.h"

namespace dmrt::bench {

struct DmtreeRun {
  using Options = dmtree::Options;
  template <Transport T>
  using Index = dmtree::Index<T>;
  // Its cache, combiner and collaborative-service membership belong to a compute node.
  static constexpr bool kPerComputeNode = true;

  template <Transport T>
  static dmtree::Options options(dmtree::Options o, const IndexOptions& io) {
    return tree_options(o, io);
  }
};

template <Transport T>
using DmtreeAdapter = DmAdapter<DmtreeRun, T>;

int run_dmtree(const RunRequest& r, const FlagResolver<dmtree::Options>& f) {
  return run_transports<DmtreeAdapter>(r, f);
}

}  // namespace dmrt::bench
