// Sherman instantiated for the verbs transport, in an object of its own (prebuilt.cpp has the
// others): a program that uses Sherman on shm or sim links no verbs code and no rdma-core.
#include "indexes/sherman/prebuilt.h"

namespace dmrt {

template class sherman::BasicTree<VerbsTransport, btree::IntKeys>;
template class sherman::BasicTree<VerbsTransport, btree::ByteKeys>;
template class sherman::Tree<VerbsTransport>;
template class btree::KeyedTree<VerbsTransport, sherman::BasicTree, sherman::Tree<VerbsTransport>>;

}  // namespace dmrt
