// ROLEX on the transports this build compiles, prebuilt once in libdmrt
// (indexes/rolex/prebuilt.cpp): include this instead of indexes/rolex/index.h to link the index
// rather than compile it again. The entry points are [[gnu::noinline]], so a user's translation
// unit instantiates none of the index's code (indexes/common/prebuilt.h), nor its retraining
// service.
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/rolex/index.h"

namespace dmrt {

#define DMRT_ROLEX_EXTERN(T)             \
  extern template class rolex::Index<T>; \
  extern template void rolex::retrain_service<T>(ServiceContext<T>&, rolex::ServiceOptions);
DMRT_FOR_EACH_TRANSPORT(DMRT_ROLEX_EXTERN)
#undef DMRT_ROLEX_EXTERN

}  // namespace dmrt
