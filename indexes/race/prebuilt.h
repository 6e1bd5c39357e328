// RACE on the transports this build compiles, prebuilt once in libdmrt
// (generated from DMRT_RACE_PREBUILT below by indexes/meson.build): include this instead of
// indexes/race/race.h to link the index rather than compile it again. The entry points are
// [[gnu::noinline]], so a user's translation unit instantiates none of the index's code
// (indexes/common/prebuilt.h).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/race/race.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_RACE_PREBUILT(INST, T) INST class race::RaceIndex<T>;

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_RACE_PREBUILT, extern template)

}  // namespace dmrt
