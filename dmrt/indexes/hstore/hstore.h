// HStore: the index's public header, the one a program includes. It gives hstore::Index<T>, its
// Options, its two servers (HashTableServer, SkipListServer) and deploy(), which starts them where
// the transport hosts services; all prebuilt in libdmrt for each transport of the build: the
// instantiations are declared extern below and generated from DMRT_HSTORE_PREBUILT by
// dmrt/indexes/meson.build. Its entry points are [[gnu::noinline]], so a program's translation
// unit compiles none of the index's code and links it (dmrt/indexes/common/prebuilt.h). The
// internals are in detail/ (README.md maps them to the paper).
#pragma once

#include "dmrt/indexes/hstore/detail/deploy.h"
#include "dmrt/indexes/hstore/detail/prebuilt.h"
