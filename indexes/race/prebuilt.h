// RACE on the transports this build compiles, prebuilt once in libdmrt
// (indexes/race/prebuilt.cpp): include this instead of indexes/race/race.h to link the index rather
// than compile it again. The entry points are [[gnu::noinline]], so a user's translation unit
// instantiates none of the index's code (indexes/common/prebuilt.h).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/race/race.h"

namespace dmrt {

#define DMRT_RACE_EXTERN(T) extern template class race::RaceIndex<T>;
DMRT_FOR_EACH_TRANSPORT(DMRT_RACE_EXTERN)
#undef DMRT_RACE_EXTERN

}  // namespace dmrt
