// RACE instantiated once per transport of this build (declared in indexes/race/prebuilt.h).
#include "indexes/race/prebuilt.h"

namespace dmrt {

#define DMRT_RACE_INSTANTIATE(T) template class race::RaceIndex<T>;
DMRT_FOR_EACH_TRANSPORT(DMRT_RACE_INSTANTIATE)
#undef DMRT_RACE_INSTANTIATE

}  // namespace dmrt
