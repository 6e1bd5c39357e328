// Sherman instantiated once per transport of this build (declared in indexes/sherman/prebuilt.h).
#include "indexes/sherman/prebuilt.h"

namespace dmrt {

#define DMRT_SHERMAN_INSTANTIATE(T)                      \
  template class sherman::BasicTree<T, btree::IntKeys>;  \
  template class sherman::BasicTree<T, btree::ByteKeys>; \
  template class sherman::Tree<T>;                       \
  template class btree::KeyedTree<T, sherman::BasicTree, sherman::Tree<T>>;
DMRT_FOR_EACH_TRANSPORT(DMRT_SHERMAN_INSTANTIATE)
#undef DMRT_SHERMAN_INSTANTIATE

}  // namespace dmrt
