// Sherman on the transports this build compiles, prebuilt once in libdmrt
// (generated from DMRT_SHERMAN_PREBUILT below by indexes/meson.build): include this instead of
// indexes/sherman/tree.h to link the index rather than compile it again. The entry points are
// [[gnu::noinline]], so a user's translation unit instantiates none of the index's code
// (indexes/common/prebuilt.h).
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/sherman/tree.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_SHERMAN_PREBUILT(INST, T)               \
  INST class sherman::BasicTree<T, btree::IntKeys>;  \
  INST class sherman::BasicTree<T, btree::ByteKeys>; \
  INST class sherman::Tree<T>;                       \
  INST class btree::KeyedTree<T, sherman::BasicTree, sherman::Tree<T>>;

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_SHERMAN_PREBUILT, extern template)

}  // namespace dmrt
