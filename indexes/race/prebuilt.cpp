// RACE instantiated once per transport of this build (declared in indexes/race/prebuilt.h).
#include "indexes/race/prebuilt.h"

namespace dmrt {

template class race::RaceIndex<ShmTransport>;
#if DMRT_TRANSPORT_SIM
template class race::RaceIndex<SimTransport>;
#endif
#if DMRT_TRANSPORT_VERBS
template class race::RaceIndex<VerbsTransport>;
#endif

}  // namespace dmrt
