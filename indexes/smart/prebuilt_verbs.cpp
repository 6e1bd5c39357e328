// SMART instantiated for the verbs transport, in an object of its own (prebuilt.cpp has the
// others): a program that uses SMART on shm or sim links no verbs code.
#include "indexes/smart/prebuilt.h"

namespace dmrt {

template class smart::Tree<VerbsTransport>;

}  // namespace dmrt
