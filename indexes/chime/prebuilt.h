// CHIME on the transports this build compiles, prebuilt once in libdmrt
// (indexes/chime/prebuilt.cpp): include this instead of indexes/chime/tree.h to link the index
// rather than compile it again. The entry points are [[gnu::noinline]], so a user's translation
// unit instantiates none of the index's code (indexes/common/prebuilt.h).
#pragma once

#include "indexes/chime/tree.h"
#include "indexes/common/prebuilt.h"

namespace dmrt {

#define DMRT_CHIME_EXTERN(T)                                  \
  extern template class chime::BasicTree<T, btree::IntKeys>;  \
  extern template class chime::BasicTree<T, btree::ByteKeys>; \
  extern template class chime::Tree<T>;                       \
  extern template class btree::KeyedTree<T, chime::BasicTree, chime::Tree<T>>;
DMRT_FOR_EACH_TRANSPORT(DMRT_CHIME_EXTERN)
#undef DMRT_CHIME_EXTERN

}  // namespace dmrt
