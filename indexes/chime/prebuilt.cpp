// CHIME instantiated once per transport of this build (declared in indexes/chime/prebuilt.h).
#include "indexes/chime/prebuilt.h"

namespace dmrt {

#define DMRT_CHIME_INSTANTIATE(T)                      \
  template class chime::BasicTree<T, btree::IntKeys>;  \
  template class chime::BasicTree<T, btree::ByteKeys>; \
  template class chime::Tree<T>;                       \
  template class btree::KeyedTree<T, chime::BasicTree, chime::Tree<T>>;
DMRT_FOR_EACH_TRANSPORT(DMRT_CHIME_INSTANTIATE)
#undef DMRT_CHIME_INSTANTIATE

}  // namespace dmrt
