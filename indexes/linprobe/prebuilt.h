// linprobe on the transports this build compiles, prebuilt once in libdmrt
// (generated from DMRT_LINPROBE_PREBUILT below by indexes/meson.build): include this instead of
// indexes/linprobe/linprobe.h to link the index rather than compile it again
// (indexes/common/prebuilt.h explains how).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/linprobe/linprobe.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_LINPROBE_PREBUILT(INST, T) INST class linprobe::HashTable<T>;

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_LINPROBE_PREBUILT, extern template)

}  // namespace dmrt
