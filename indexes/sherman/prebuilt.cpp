// Sherman instantiated once per transport of this build (declared in indexes/sherman/prebuilt.h).
#include "indexes/sherman/prebuilt.h"

namespace dmrt {

template class sherman::Tree<ShmTransport>;
#if DMRT_TRANSPORT_SIM
template class sherman::Tree<SimTransport>;
#endif
#if DMRT_TRANSPORT_VERBS
template class sherman::Tree<VerbsTransport>;
#endif

}  // namespace dmrt
