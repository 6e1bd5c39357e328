// dmrt-bench's Sherman (dmrt/indexes/sherman), registered for every transport compiled in; its
// --sherman-* flags are sherman::Options::fields().
#include "dmrt/indexes/sherman/sherman.h"
#include "bench/indexes/register.h"

namespace dmrt::bench {
namespace {

const RegisterDm<TreeRun<sherman::Options, sherman::Index>> kSherman{
    {"sherman", "Sherman",
     "Sherman (SIGMOD'22): B+ tree with cached internal nodes, whole-leaf reads, hierarchical "
     "locks",
     40}};

}  // namespace
}  // namespace dmrt::bench
