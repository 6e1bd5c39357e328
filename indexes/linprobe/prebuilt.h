// linprobe on the transports this build compiles, prebuilt once in libdmrt
// (indexes/linprobe/prebuilt.cpp): include this instead of indexes/linprobe/linprobe.h to link
// the index rather than compile it again (indexes/common/prebuilt.h explains how).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/linprobe/linprobe.h"

namespace dmrt {

#define DMRT_LINPROBE_EXTERN(T) extern template class linprobe::HashTable<T>;
DMRT_FOR_EACH_TRANSPORT(DMRT_LINPROBE_EXTERN)
#undef DMRT_LINPROBE_EXTERN

}  // namespace dmrt
