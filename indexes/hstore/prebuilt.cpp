// HStore instantiated once per transport of this build (declared in indexes/hstore/prebuilt.h).
#include "indexes/hstore/prebuilt.h"

namespace dmrt {

template class hstore::Index<ShmTransport>;
#if DMRT_TRANSPORT_SIM
template class hstore::Index<SimTransport>;
#endif
#if DMRT_TRANSPORT_VERBS
template class hstore::Index<VerbsTransport>;
#endif

}  // namespace dmrt
