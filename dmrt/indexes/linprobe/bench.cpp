// dmrt-bench's linprobe: its --linprobe-* flags (linprobe::Options::fields()) and how the bench
// sizes it, registered for every transport compiled in. bench/meson.build finds this file from
// the index's line in dmrt/indexes/meson.build.
#include "bench/indexes/register.h"
#include "dmrt/indexes/linprobe/linprobe.h"

namespace dmrt::bench {
namespace {

struct LinprobeRun {
  using Options = linprobe::Options;
  template <Transport T>
  using Index = linprobe::Index<T>;
  static constexpr bool kPerComputeNode = false;  // no per-compute-node state: one shared object

  // The table never grows: the bench sizes it for every key the run may hold (at a
  // quarter load).
  template <Transport T>
  static linprobe::Options options(linprobe::Options o, const IndexOptions& io) {
    o.value_size = static_cast<uint32_t>(io.value_size);
    o.expected_keys = io.expected_keys;
    return o;
  }
};

const RegisterDm<LinprobeRun> kLinprobe{
    {"linprobe", "linprobe", "One-sided linear probing in a fixed window (docs/new-index.md)", 90}};

}  // namespace
}  // namespace dmrt::bench
