// SMART on the transports this build compiles, prebuilt once in libdmrt
// (indexes/smart/prebuilt.cpp): include this instead of indexes/smart/tree.h to link the index
// rather than compile it again (indexes/common/prebuilt.h).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/smart/tree.h"

namespace dmrt {

#define DMRT_SMART_EXTERN(T) extern template class smart::Tree<T>;
DMRT_FOR_EACH_TRANSPORT(DMRT_SMART_EXTERN)
#undef DMRT_SMART_EXTERN

}  // namespace dmrt
