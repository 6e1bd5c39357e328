// CHIME instantiated once per transport of this build (declared in indexes/chime/prebuilt.h).
#include "indexes/chime/prebuilt.h"

namespace dmrt {

template class chime::Tree<ShmTransport>;
#if DMRT_TRANSPORT_SIM
template class chime::Tree<SimTransport>;
#endif
#if DMRT_TRANSPORT_VERBS
template class chime::Tree<VerbsTransport>;
#endif

}  // namespace dmrt
