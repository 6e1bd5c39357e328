// HStore on the transports this build compiles, prebuilt once in libdmrt
// (indexes/hstore/prebuilt.cpp): include this instead of indexes/hstore/index.h to link the index
// rather than compile it again. The entry points are [[gnu::noinline]], so a user's translation
// unit instantiates none of the index's code (indexes/common/prebuilt.h). The same holds for its
// two servers (hts.h, sls.h), whose entry point is run().
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/hstore/hts.h"
#include "indexes/hstore/index.h"
#include "indexes/hstore/sls.h"

namespace dmrt {

extern template class hstore::Index<ShmTransport>;
extern template class hstore::HashTableServer<ShmTransport>;
extern template class hstore::SkipListServer<ShmTransport>;
#if DMRT_TRANSPORT_SIM
extern template class hstore::Index<SimTransport>;
extern template class hstore::HashTableServer<SimTransport>;
extern template class hstore::SkipListServer<SimTransport>;
#endif
#if DMRT_TRANSPORT_VERBS
extern template class hstore::Index<VerbsTransport>;
extern template class hstore::HashTableServer<VerbsTransport>;
extern template class hstore::SkipListServer<VerbsTransport>;
#endif

}  // namespace dmrt
