// HStore and its two servers instantiated once per transport of this build (declared in
// indexes/hstore/prebuilt.h).
#include "indexes/hstore/prebuilt.h"

namespace dmrt {

template class hstore::Index<ShmTransport>;
template class hstore::HashTableServer<ShmTransport>;
template class hstore::SkipListServer<ShmTransport>;
#if DMRT_TRANSPORT_SIM
template class hstore::Index<SimTransport>;
template class hstore::HashTableServer<SimTransport>;
template class hstore::SkipListServer<SimTransport>;
#endif
#if DMRT_TRANSPORT_VERBS
template class hstore::Index<VerbsTransport>;
template class hstore::HashTableServer<VerbsTransport>;
template class hstore::SkipListServer<VerbsTransport>;
#endif

}  // namespace dmrt
