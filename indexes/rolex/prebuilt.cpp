// ROLEX instantiated once per transport of this build (declared in indexes/rolex/prebuilt.h).
#include "indexes/rolex/prebuilt.h"

namespace dmrt {

template class rolex::Index<ShmTransport>;
template void rolex::retrain_service<ShmTransport>(ServiceContext<ShmTransport>&,
                                                   rolex::ServiceOptions);
#if DMRT_TRANSPORT_SIM
template class rolex::Index<SimTransport>;
template void rolex::retrain_service<SimTransport>(ServiceContext<SimTransport>&,
                                                   rolex::ServiceOptions);
#endif
#if DMRT_TRANSPORT_VERBS
template class rolex::Index<VerbsTransport>;
template void rolex::retrain_service<VerbsTransport>(ServiceContext<VerbsTransport>&,
                                                     rolex::ServiceOptions);
#endif

}  // namespace dmrt
