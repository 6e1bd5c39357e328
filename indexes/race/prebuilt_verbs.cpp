// RACE instantiated for the verbs transport, in an object of its own (prebuilt.cpp has the
// others): a program that uses RACE on shm or sim links no verbs code and no rdma-core.
#include "indexes/race/prebuilt.h"

namespace dmrt {

template class race::RaceIndex<VerbsTransport>;

}  // namespace dmrt
