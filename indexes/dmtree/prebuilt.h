// DMTree on the transports this build compiles, prebuilt once in libdmrt
// (indexes/dmtree/prebuilt.cpp): include this instead of indexes/dmtree/tree.h to link the index
// rather than compile it again. The entry points are [[gnu::noinline]], so a user's translation
// unit instantiates none of the index's code (indexes/common/prebuilt.h).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/dmtree/tree.h"

namespace dmrt {

#define DMRT_DMTREE_EXTERN(T)                                  \
  extern template class dmtree::BasicTree<T, btree::IntKeys>;  \
  extern template class dmtree::BasicTree<T, btree::ByteKeys>; \
  extern template class dmtree::Tree<T>;                       \
  extern template class btree::KeyedTree<T, dmtree::BasicTree, dmtree::Tree<T>>;
DMRT_FOR_EACH_TRANSPORT(DMRT_DMTREE_EXTERN)
#undef DMRT_DMTREE_EXTERN

}  // namespace dmrt
