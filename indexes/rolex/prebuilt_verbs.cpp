// ROLEX instantiated for the verbs transport, in an object of its own (prebuilt.cpp has the
// others): a program that uses ROLEX on shm or sim links no verbs code and no rdma-core.
#include "indexes/rolex/prebuilt.h"

namespace dmrt {

template class rolex::Index<VerbsTransport>;
template void rolex::retrain_service<VerbsTransport>(ServiceContext<VerbsTransport>&,
                                                     rolex::ServiceOptions);

}  // namespace dmrt
