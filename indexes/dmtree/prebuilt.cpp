// DMTree instantiated once per transport of this build (declared in indexes/dmtree/prebuilt.h).
#include "indexes/dmtree/prebuilt.h"

namespace dmrt {

#define DMRT_DMTREE_INSTANTIATE(T)                      \
  template class dmtree::BasicTree<T, btree::IntKeys>;  \
  template class dmtree::BasicTree<T, btree::ByteKeys>; \
  template class dmtree::Tree<T>;                       \
  template class btree::KeyedTree<T, dmtree::BasicTree, dmtree::Tree<T>>;
DMRT_FOR_EACH_TRANSPORT(DMRT_DMTREE_INSTANTIATE)
#undef DMRT_DMTREE_INSTANTIATE

}  // namespace dmrt
