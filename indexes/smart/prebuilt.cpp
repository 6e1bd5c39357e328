// SMART instantiated once per transport of this build (declared in indexes/smart/prebuilt.h).
#include "indexes/smart/prebuilt.h"

namespace dmrt {

#define DMRT_SMART_INSTANTIATE(T) template class smart::Tree<T>;
DMRT_FOR_EACH_TRANSPORT(DMRT_SMART_INSTANTIATE)
#undef DMRT_SMART_INSTANTIATE

}  // namespace dmrt
