// The memory-node services dmrt-node can host: the one list that names the indexes' services.
#pragma once

#include "indexes/hstore/services.h"
#include "indexes/rolex/services.h"
#include "runtime/service_registry.h"

namespace dmrt::node {

// A new index with a memory-node service adds its registration (indexes/NAME/services.h) here.
using Services = ServiceRegistry<rolex::RetrainService, hstore::HtsService, hstore::SlsService>;

}  // namespace dmrt::node
