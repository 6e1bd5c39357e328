// dmrt-bench's RACE (dmrt/indexes/race): its --race-* flags (race::Options::fields(), plus what the
// bench derives) and how the bench runs it, registered for every transport compiled in.
#include "dmrt/indexes/race/race.h"
#include "bench/indexes/register.h"

namespace dmrt::bench {
namespace {

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

// The bench pre-sizes the directory from the expected keys (no resize during the run) unless
// --race-initial-depth is given: then the table starts that small and resizes online, and the
// results' index_stats report the resizes and what they cost.
struct RaceExtras : FlagExtras<race::Options> {
  void finish(race::Options& o, const IndexOptions&, const FlagList& given) const {
    if (given.given("--race-initial-depth")) o.expected_keys = 0;
  }
  std::string check(const race::Options& o) const {
    if (o.initial_global_depth > o.max_global_depth)
      return "--race-initial-depth must not exceed --race-max-depth";
    return {};
  }
};

const RegisterDm<RaceRun, RaceExtras> kRace{
    {"race", "RACE",
     "RACE hashing (ATC'21): one-sided lock-free extendible hashing on memory nodes", 10}};

}  // namespace
}  // namespace dmrt::bench
