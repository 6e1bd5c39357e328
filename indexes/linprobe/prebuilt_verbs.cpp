// linprobe instantiated for the verbs transport, in an object of its own (prebuilt.cpp has the
// others): a program that uses linprobe on shm or sim links no verbs code and no rdma-core.
#include "indexes/linprobe/prebuilt.h"

namespace dmrt {

template class linprobe::HashTable<VerbsTransport>;

}  // namespace dmrt
