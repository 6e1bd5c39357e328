// CHIME on the transports this build compiles, prebuilt once in libdmrt
// (generated from DMRT_CHIME_PREBUILT below by indexes/meson.build): include this instead of
// indexes/chime/tree.h to link the index rather than compile it again. The entry points are
// [[gnu::noinline]], so a user's translation unit instantiates none of the index's code
// (indexes/common/prebuilt.h).
#pragma once

#include "indexes/chime/tree.h"
#include "indexes/common/prebuilt.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_CHIME_PREBUILT(INST, T)               \
  INST class chime::BasicTree<T, btree::IntKeys>;  \
  INST class chime::BasicTree<T, btree::ByteKeys>; \
  INST class chime::Tree<T>;                       \
  INST class btree::KeyedTree<T, chime::BasicTree, chime::Tree<T>>;

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_CHIME_PREBUILT, extern template)

}  // namespace dmrt
