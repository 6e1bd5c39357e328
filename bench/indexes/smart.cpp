// dmrt-bench's SMART (dmrt/indexes/smart), registered for every transport compiled in; its
// --smart-* flags are smart::Options::fields().
#include "dmrt/indexes/smart/smart.h"
#include "bench/indexes/register.h"

namespace dmrt::bench {
namespace {

const RegisterDm<TreeRun<smart::Options, smart::Index>> kSmart{
    {"smart", "SMART",
     "SMART (OSDI'23): adaptive radix tree with lock-free inner nodes and a compute-side cache",
     70}};

}  // namespace
}  // namespace dmrt::bench
