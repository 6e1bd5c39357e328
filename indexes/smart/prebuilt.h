// SMART on the transports this build compiles, prebuilt once in libdmrt
// (generated from DMRT_SMART_PREBUILT below by indexes/meson.build): include this instead of
// indexes/smart/tree.h to link the index rather than compile it again (indexes/common/prebuilt.h).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/smart/tree.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_SMART_PREBUILT(INST, T) INST class smart::Tree<T>;

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_SMART_PREBUILT, extern template)

}  // namespace dmrt
