// HStore and its two servers instantiated once per transport of this build (declared in
// indexes/hstore/prebuilt.h).
#include "indexes/hstore/prebuilt.h"

namespace dmrt {

#define DMRT_HSTORE_INSTANTIATE(T)           \
  template class hstore::Index<T>;           \
  template class hstore::HashTableServer<T>; \
  template class hstore::SkipListServer<T>;
DMRT_FOR_EACH_TRANSPORT(DMRT_HSTORE_INSTANTIATE)
#undef DMRT_HSTORE_INSTANTIATE

}  // namespace dmrt
