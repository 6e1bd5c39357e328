// DMTree on the transports this build compiles, prebuilt once in libdmrt
// (generated from DMRT_DMTREE_PREBUILT below by indexes/meson.build): include this instead of
// indexes/dmtree/tree.h to link the index rather than compile it again. The entry points are
// [[gnu::noinline]], so a user's translation unit instantiates none of the index's code
// (indexes/common/prebuilt.h).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/dmtree/tree.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_DMTREE_PREBUILT(INST, T)               \
  INST class dmtree::BasicTree<T, btree::IntKeys>;  \
  INST class dmtree::BasicTree<T, btree::ByteKeys>; \
  INST class dmtree::Tree<T>;                       \
  INST class btree::KeyedTree<T, dmtree::BasicTree, dmtree::Tree<T>>;

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_DMTREE_PREBUILT, extern template)

}  // namespace dmrt
