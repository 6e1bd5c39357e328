// Sherman on the transports this build compiles, prebuilt once in libdmrt
// (indexes/sherman/prebuilt.cpp): include this instead of indexes/sherman/tree.h to link the index
// rather than compile it again. The entry points are [[gnu::noinline]], so a user's translation
// unit instantiates none of the index's code (indexes/common/prebuilt.h).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/sherman/tree.h"

namespace dmrt {

extern template class sherman::Tree<ShmTransport>;
#if DMRT_TRANSPORT_SIM
extern template class sherman::Tree<SimTransport>;
#endif
#if DMRT_TRANSPORT_VERBS
extern template class sherman::Tree<VerbsTransport>;
#endif

}  // namespace dmrt
