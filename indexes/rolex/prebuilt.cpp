// ROLEX instantiated once per transport of this build (declared in indexes/rolex/prebuilt.h).
#include "indexes/rolex/prebuilt.h"

namespace dmrt {

#define DMRT_ROLEX_INSTANTIATE(T) \
  template class rolex::Index<T>; \
  template void rolex::retrain_service<T>(ServiceContext<T>&, rolex::ServiceOptions);
DMRT_FOR_EACH_TRANSPORT(DMRT_ROLEX_INSTANTIATE)
#undef DMRT_ROLEX_INSTANTIATE

}  // namespace dmrt
