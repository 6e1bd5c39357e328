// DMTree instantiated for the verbs transport, in an object of its own (prebuilt.cpp has the
// others): a program that uses DMTree on shm or sim links no verbs code and no rdma-core.
#include "indexes/dmtree/prebuilt.h"

namespace dmrt {

template class dmtree::BasicTree<VerbsTransport, btree::IntKeys>;
template class dmtree::BasicTree<VerbsTransport, btree::ByteKeys>;
template class dmtree::Tree<VerbsTransport>;
template class btree::KeyedTree<VerbsTransport, dmtree::BasicTree, dmtree::Tree<VerbsTransport>>;

}  // namespace dmrt
