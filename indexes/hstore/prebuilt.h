// HStore on the transports this build compiles, prebuilt once in libdmrt
// (indexes/hstore/prebuilt.cpp): include this instead of indexes/hstore/index.h to link the index
// rather than compile it again. The entry points are [[gnu::noinline]], so a user's translation
// unit instantiates none of the index's code (indexes/common/prebuilt.h).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/hstore/index.h"

namespace dmrt {

extern template class hstore::Index<ShmTransport>;
#if DMRT_TRANSPORT_SIM
extern template class hstore::Index<SimTransport>;
#endif
#if DMRT_TRANSPORT_VERBS
extern template class hstore::Index<VerbsTransport>;
#endif

}  // namespace dmrt
