// CHIME instantiated for the verbs transport, in an object of its own (prebuilt.cpp has the
// others): a program that uses CHIME on shm or sim links no verbs code and no rdma-core.
#include "indexes/chime/prebuilt.h"

namespace dmrt {

template class chime::BasicTree<VerbsTransport, btree::IntKeys>;
template class chime::BasicTree<VerbsTransport, btree::ByteKeys>;
template class chime::Tree<VerbsTransport>;
template class btree::KeyedTree<VerbsTransport, chime::BasicTree, chime::Tree<VerbsTransport>>;

}  // namespace dmrt
