// HStore instantiated for the verbs transport, in an object of its own (prebuilt.cpp has the
// others): a program that uses HStore on shm or sim links no verbs code and no rdma-core.
#include "indexes/hstore/prebuilt.h"

namespace dmrt {

template class hstore::Index<VerbsTransport>;
template class hstore::HashTableServer<VerbsTransport>;
template class hstore::SkipListServer<VerbsTransport>;

}  // namespace dmrt
