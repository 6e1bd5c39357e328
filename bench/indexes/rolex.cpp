// dmrt-bench's ROLEX (dmrt/indexes/rolex): DmAdapter over RolexRun (bench/indexes/rolex_run.h),
// registered for every transport compiled in; its --rolex-* flags are rolex::Options::fields().
#include <array>
#include <string_view>

#include "bench/indexes/register.h"
#include "bench/indexes/rolex_run.h"

namespace dmrt::bench {
namespace {

// dmrt-bench's defaults are the index's own: the load phase bulk loads and trains (paper), and
// retraining starts at 128 SLT slots (2^7). A load by inserts (--rolex-bulk-load off) lands
// every key in a synonym leaf of groups trained on nothing; --rolex-retrain-threshold 16 then
// keeps its searches at a few leaves instead of ~90 (the setting measured before bulk loads).
struct RolexBench : RolexRun {
  // initial_groups follows the expected keys (RolexRun::options): --help shows no default.
  static constexpr std::array<std::string_view, 1> kDerivedDefaults{"initial_groups"};
};

const RegisterDm<RolexBench> kRolex{
    {"rolex", "ROLEX",
     "ROLEX (FAST'23): learned models cached on compute nodes, one-sided leaves, retraining on "
     "the memory node",
     50}};

}  // namespace
}  // namespace dmrt::bench
