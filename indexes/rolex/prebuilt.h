// ROLEX on the transports this build compiles, prebuilt once in libdmrt
// (generated from DMRT_ROLEX_PREBUILT below by indexes/meson.build): include this instead of
// indexes/rolex/index.h to link the index rather than compile it again. The entry points are
// [[gnu::noinline]], so a user's translation unit instantiates none of the index's code
// (indexes/common/prebuilt.h), nor its retraining service.
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/rolex/index.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_ROLEX_PREBUILT(INST, T) \
  INST class rolex::Index<T>;        \
  INST void rolex::retrain_service<T>(ServiceContext<T>&, rolex::ServiceOptions);

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_ROLEX_PREBUILT, extern template)

}  // namespace dmrt
