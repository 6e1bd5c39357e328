// HStore on the transports this build compiles, prebuilt once in libdmrt
// (generated from DMRT_HSTORE_PREBUILT below by indexes/meson.build): include this instead of
// indexes/hstore/index.h to link the index rather than compile it again. The entry points are
// [[gnu::noinline]], so a user's translation unit instantiates none of the index's code
// (indexes/common/prebuilt.h). The same holds for its two servers (hts.h, sls.h), whose entry point
// is run().
#pragma once

#include "indexes/common/prebuilt.h"
#include "indexes/hstore/hts.h"
#include "indexes/hstore/index.h"
#include "indexes/hstore/sls.h"

// The templates libdmrt instantiates for each transport T: INST is `template` there and
// `extern template` here.
#define DMRT_HSTORE_PREBUILT(INST, T)    \
  INST class hstore::Index<T>;           \
  INST class hstore::HashTableServer<T>; \
  INST class hstore::SkipListServer<T>;

namespace dmrt {

DMRT_FOR_EACH_TRANSPORT(DMRT_HSTORE_PREBUILT, extern template)

}  // namespace dmrt
