// ROLEX on the transports this build compiles, prebuilt once in libdmrt
// (indexes/rolex/prebuilt.cpp): include this instead of indexes/rolex/index.h to link the index
// rather than compile it again. The entry points are [[gnu::noinline]], so a user's translation
// unit instantiates none of the index's code (indexes/common/prebuilt.h), nor its retraining
// service.
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/rolex/index.h"

namespace dmrt {

extern template class rolex::Index<ShmTransport>;
extern template void rolex::retrain_service<ShmTransport>(ServiceContext<ShmTransport>&,
                                                          rolex::ServiceOptions);
#if DMRT_TRANSPORT_SIM
extern template class rolex::Index<SimTransport>;
extern template void rolex::retrain_service<SimTransport>(ServiceContext<SimTransport>&,
                                                          rolex::ServiceOptions);
#endif
#if DMRT_TRANSPORT_VERBS
extern template class rolex::Index<VerbsTransport>;
extern template void rolex::retrain_service<VerbsTransport>(ServiceContext<VerbsTransport>&,
                                                            rolex::ServiceOptions);
#endif

}  // namespace dmrt
