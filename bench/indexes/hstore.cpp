// dmrt-bench's HStore (dmrt/indexes/hstore): DmAdapter over HStoreRun (bench/indexes/hstore_run.h),
// registered for every transport compiled in; its --hstore-* flags are hstore::Options::fields().
#include "bench/indexes/hstore_run.h"
#include "bench/indexes/register.h"

namespace dmrt::bench {
namespace {

const RegisterDm<HStoreRun> kHStore{
    {"hstore", "HStore",
     "HStore (SYSTOR'23): one-sided GET on a hash table server, writes and scans through it and a "
     "skiplist server",
     20}};

}  // namespace
}  // namespace dmrt::bench
