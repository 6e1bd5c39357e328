// CHIME on the transports this build compiles, prebuilt once in libdmrt
// (indexes/chime/prebuilt.cpp): include this instead of indexes/chime/tree.h to link the index
// rather than compile it again. The entry points are [[gnu::noinline]], so a user's translation
// unit instantiates none of the index's code (indexes/common/prebuilt.h).
#pragma once

#include "indexes/chime/tree.h"
#include "indexes/common/prebuilt.h"

namespace dmrt {

extern template class chime::Tree<ShmTransport>;
#if DMRT_TRANSPORT_SIM
extern template class chime::Tree<SimTransport>;
#endif
#if DMRT_TRANSPORT_VERBS
extern template class chime::Tree<VerbsTransport>;
#endif

}  // namespace dmrt
