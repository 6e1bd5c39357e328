// How dmrt-bench runs HStore (DmAdapter's run spec, bench/indexes/dm_adapter.h): the index and
// its two servers wherever the transport hosts services (dmrt/indexes/hstore/detail/deploy.h). Used
// by bench/indexes/hstore.cpp and tests/hstore/hstore_bench_adapter_test.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "bench/indexes/adapter.h"
#include "bench/indexes/dm_adapter.h"
#include "dmrt/indexes/hstore/detail/deploy.h"
#include "dmrt/policies/hosting.h"
#include "dmrt/runtime/client.h"
#include "dmrt/runtime/error.h"

namespace dmrt::bench {

struct HStoreRun {
  using Options = hstore::Options;
  template <Transport T>
  using Index = hstore::Index<T>;
  static constexpr bool kPerComputeNode = false;

  template <Transport T>
  static Options options(Options o, const IndexOptions& io) {
    o.expected_keys = std::max<uint64_t>(io.expected_keys, 1024);
    if (io.value_size > hstore::Record::kMaxValue)
      throw ConfigError("hstore: --value-size " + std::to_string(io.value_size) +
                        " exceeds the record limit of " +
                        std::to_string(hstore::Record::kMaxValue) + " bytes");
    return o;
  }

  // The servers: on shm both on one thread of the pool's creator, on sim fibers in virtual time
  // charged as the memory node's CPU, on verbs a thread on the memory node's own Cluster in the
  // one-process mode; with a pool or cluster of processes, the memory nodes' dmrt-node
  // (--service hstore-hts / hstore-sls; nothing to stop here then).
  template <Transport T>
  static Deployed<Index<T>> deploy(Client<T>& setup, const Options& o) {
    return hstore::deploy(setup, o, service_hosting(setup));
  }
};

}  // namespace dmrt::bench
