// ROLEX instantiated once per transport of this build (declared in indexes/rolex/prebuilt.h).
#include "indexes/rolex/prebuilt.h"

namespace dmrt {

template class rolex::Index<ShmTransport>;
#if DMRT_TRANSPORT_SIM
template class rolex::Index<SimTransport>;
#endif
#if DMRT_TRANSPORT_VERBS
template class rolex::Index<VerbsTransport>;
#endif

}  // namespace dmrt
