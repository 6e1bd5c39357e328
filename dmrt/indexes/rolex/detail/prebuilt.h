// ROLEX's instantiations, declared extern for each transport of the build (the public header
// rolex.h explains them). Its services and deploy() include this, not the public header, which
// includes them.
#pragma once

#include "dmrt/indexes/common/prebuilt.h"
#include "dmrt/indexes/rolex/detail/index.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_ROLEX_PREBUILT(INST, T) \
  INST class rolex::Index<T>;        \
  INST void rolex::retrain_service<T>(ServiceContext<T>&, rolex::ServiceOptions);

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_ROLEX_PREBUILT, extern template)

}  // namespace dmrt
