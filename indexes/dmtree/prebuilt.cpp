// DMTree instantiated once per transport of this build (declared in indexes/dmtree/prebuilt.h).
#include "indexes/dmtree/prebuilt.h"

namespace dmrt {

template class dmtree::Tree<ShmTransport>;
#if DMRT_TRANSPORT_SIM
template class dmtree::Tree<SimTransport>;
#endif
#if DMRT_TRANSPORT_VERBS
template class dmtree::Tree<VerbsTransport>;
#endif

}  // namespace dmrt
