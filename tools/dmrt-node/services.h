// The memory-node services dmrt-node can host: the one list that names the indexes' services.
#pragma once

#include "dmrt/indexes/hstore/detail/services.h"
#include "dmrt/indexes/rolex/detail/services.h"
#include "dmrt/runtime/service_registry.h"

namespace dmrt::node {

// A new index with a memory-node service adds its registration
// (dmrt/indexes/NAME/detail/services.h) here.
using Services = ServiceRegistry<rolex::RetrainService, hstore::HtsService, hstore::SlsService>;

}  // namespace dmrt::node
