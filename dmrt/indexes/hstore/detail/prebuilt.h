// HStore's instantiations, declared extern for each transport of the build (the public header
// hstore.h explains them). Its services and deploy() include this, not the public header, which
// includes them.
#pragma once

#include "dmrt/indexes/common/prebuilt.h"
#include "dmrt/indexes/hstore/detail/hts.h"
#include "dmrt/indexes/hstore/detail/index.h"
#include "dmrt/indexes/hstore/detail/sls.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_HSTORE_PREBUILT(INST, T)    \
  INST class hstore::Index<T>;           \
  INST class hstore::HashTableServer<T>; \
  INST class hstore::SkipListServer<T>;

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_HSTORE_PREBUILT, extern template)

}  // namespace dmrt
