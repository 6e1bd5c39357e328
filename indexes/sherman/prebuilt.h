// Sherman on the transports this build compiles, prebuilt once in libdmrt
// (indexes/sherman/prebuilt.cpp): include this instead of indexes/sherman/tree.h to link the index
// rather than compile it again. The entry points are [[gnu::noinline]], so a user's translation
// unit instantiates none of the index's code (indexes/common/prebuilt.h).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/sherman/tree.h"

namespace dmrt {

#define DMRT_SHERMAN_EXTERN(T)                                  \
  extern template class sherman::BasicTree<T, btree::IntKeys>;  \
  extern template class sherman::BasicTree<T, btree::ByteKeys>; \
  extern template class sherman::Tree<T>;                       \
  extern template class btree::KeyedTree<T, sherman::BasicTree, sherman::Tree<T>>;
DMRT_FOR_EACH_TRANSPORT(DMRT_SHERMAN_EXTERN)
#undef DMRT_SHERMAN_EXTERN

}  // namespace dmrt
