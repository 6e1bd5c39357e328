// HStore on the transports this build compiles, prebuilt once in libdmrt
// (indexes/hstore/prebuilt.cpp): include this instead of indexes/hstore/index.h to link the index
// rather than compile it again. The entry points are [[gnu::noinline]], so a user's translation
// unit instantiates none of the index's code (indexes/common/prebuilt.h). The same holds for its
// two servers (hts.h, sls.h), whose entry point is run().
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/hstore/hts.h"
#include "indexes/hstore/index.h"
#include "indexes/hstore/sls.h"

namespace dmrt {

#define DMRT_HSTORE_EXTERN(T)                       \
  extern template class hstore::Index<T>;           \
  extern template class hstore::HashTableServer<T>; \
  extern template class hstore::SkipListServer<T>;
DMRT_FOR_EACH_TRANSPORT(DMRT_HSTORE_EXTERN)
#undef DMRT_HSTORE_EXTERN

}  // namespace dmrt
